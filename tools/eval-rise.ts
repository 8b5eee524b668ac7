/**
 * @file How soon a run's evaluation score rises, from a `cli train` run's history.jsonl: the
 * first evaluation after step 0 whose val/reward beats step 0's by --margin, with seconds
 * since --started (tools/device/env-learning.sh writes it as RUN.started). One JSON line.
 *
 *   npx tsx tools/eval-rise.ts --history OUT/history.jsonl --started ISO [--margin 0.03]
 */
import { readFile } from 'node:fs/promises';

interface Line {
	step: number;
	recorded_at: string;
	'val/reward'?: number;
}

function flag(argv: string[], name: string): string | undefined {
	const i = argv.indexOf(`--${name}`);
	return i >= 0 ? argv[i + 1] : undefined;
}

async function main(): Promise<void> {
	const argv = process.argv.slice(2);
	const history = flag(argv, 'history');
	const started = Date.parse(flag(argv, 'started') ?? '');
	const margin = Number(flag(argv, 'margin') ?? 0.03);
	if (!history || Number.isNaN(started) || !(margin >= 0))
		throw new Error('usage: eval-rise.ts --history FILE --started ISO [--margin X >= 0]');
	const lines = (await readFile(history, 'utf8'))
		.split('\n')
		.filter((l) => l.trim())
		.map((l) => JSON.parse(l) as Line);
	const evals = lines
		.filter((l) => typeof l['val/reward'] === 'number')
		.map((l) => ({
			step: l.step,
			seconds: Math.round((Date.parse(l.recorded_at) - started) / 100) / 10,
			reward: l['val/reward']!
		}));
	const first = evals.find((e) => e.step === 0);
	if (!first) throw new Error(`${history} has no evaluation at step 0`);
	const rise = evals.find((e) => e.step > 0 && e.reward >= first.reward + margin) ?? null;
	process.stdout.write(JSON.stringify({ margin, step0: first.reward, rise, evals }) + '\n');
}

main().catch((error) => {
	process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
	process.exit(1);
});
