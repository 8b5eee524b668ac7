/**
 * @file The server's soak benchmark: `cli serve` in its own process under `--clients`
 * concurrent clients (serve-load.ts) for `--seconds`, a prober timing GET /v1/models and
 * /health, and the server's resident memory after a warm-up and once idle. One JSON object.
 *
 *   npx tsx tools/bench/serve-soak.ts [--model DIR] [--clients 32] [--seconds 300]
 *       [--warmup 30] [--cli scripts/cli.ts | .gpu/cli.mjs]
 */
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { resolve } from 'node:path';
import { ensureBundledModel } from '../../scripts/default-model';
import { STATIC_ROOT } from '../../scripts/cli/static-root';
import { bodyLimitFor } from '../../src/lib/serve/node/http-body';
import { option } from './bench-support';
import { probeLatency, quantile, runLoad, unexpectedStatuses } from './serve-load';

const rssMiB = async (pid: number) => {
	const status = await readFile(`/proc/${pid}/status`, 'utf8');
	return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) / 1024;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
	const model = resolve(option('model') ?? resolve(STATIC_ROOT, 'models/tabrl-tiny'));
	const clients = Number(option('clients') ?? '32');
	const seconds = Number(option('seconds') ?? '300');
	const warmup = Number(option('warmup') ?? '30');
	const cli = option('cli') ?? 'scripts/cli.ts';
	const maxContext = 512;
	await ensureBundledModel(model, STATIC_ROOT);
	const child = spawn(
		process.execPath,
		[
			...(cli.endsWith('.mjs') ? [] : ['--import', 'tsx']),
			cli,
			'serve',
			'--model',
			model,
			'--port',
			'0',
			'--max-context',
			String(maxContext),
			'--name',
			'soak'
		],
		{ stdio: ['ignore', 'pipe', 'inherit'] }
	);
	try {
		const line = await new Promise<string>((ok, fail) => {
			createInterface({ input: child.stdout! }).once('line', ok);
			child.once('exit', (code) => fail(new Error(`cli serve exited ${code} before listening`)));
		});
		const url = (JSON.parse(line) as { listening: string }).listening;
		const load = (ms: number) =>
			Promise.all([
				runLoad({
					url,
					model: 'soak',
					clients,
					until: performance.now() + ms,
					tooBigBytes: Math.max(bodyLimitFor(maxContext) + 1, 1 << 20)
				}),
				probeLatency(url, ['/v1/models', '/health'], performance.now() + ms)
			]);
		const rssStart = await rssMiB(child.pid!);
		await load(warmup * 1000);
		await sleep(2000);
		const rssWarm = await rssMiB(child.pid!);
		const t0 = performance.now();
		const [report, probes] = await load(seconds * 1000);
		const loadSeconds = (performance.now() - t0) / 1000;
		await sleep(5000);
		const rssAfter = await rssMiB(child.pid!);
		const latency = Object.fromEntries(
			Object.entries(probes.ms).map(([path, ms]) => [
				path,
				{
					probes: ms.length,
					p50: quantile(ms, 0.5),
					p99: quantile(ms, 0.99),
					max: Math.max(...ms)
				}
			])
		);
		const requests = Object.values(report.statuses).reduce((s, n) => s + n, 0);
		console.log(
			JSON.stringify(
				{
					model,
					clients,
					seconds: loadSeconds,
					requests,
					counts: report.counts,
					statuses: report.statuses,
					unexpected: unexpectedStatuses(report),
					unfinishedStreams: report.unfinishedStreams,
					probeFailures: probes.failures.length,
					latencyMs: latency,
					rssMiB: { start: rssStart, afterWarmup: rssWarm, afterLoad: rssAfter },
					rssGrowth: rssAfter / rssWarm - 1
				},
				null,
				1
			)
		);
	} finally {
		child.kill('SIGTERM');
	}
}

main().catch((error: unknown) => {
	console.error(error);
	process.exit(1);
});
