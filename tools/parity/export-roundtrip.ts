/**
 * @file Entry of the export round trip: a run exported from the page loads in peft onto its
 * base, and `cli export --merge` of it in transformers, both scoring TabRL's logprobs
 * (export-roundtrip-plan.ts: the folder; -lib.ts: a case; -standin.ts: the CPU checks).
 * `export DIR [--tiny] [--layers N] [--cases llama,qwen2]`, or `selftest DIR` (export,
 * then the stand-in: runs anywhere). Exit 0 when every check passes.
 *
 *   npx tsx tools/parity/export-roundtrip.ts selftest /tmp/er --tiny
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { acquireGpu, type Gpu } from '../../src/lib/gpu/device';
import { exportCase } from './export-roundtrip-lib';
import { makeExportPlan, writeExportPlan, type ExportPlan } from './export-roundtrip-plan';
import { checkStandIn } from './export-roundtrip-standin';

const USAGE =
	'usage: export-roundtrip (export|selftest) DIR [--tiny] [--layers N] [--cases llama,qwen2]';
const log = (line: string) => console.error(`[export-roundtrip] ${line}`);
const errorText = (error: unknown) => String((error as Error)?.stack ?? error);

async function runExportCases(gpu: Gpu, root: string, plan: ExportPlan) {
	await writeExportPlan(root, plan);
	const cases: (Awaited<ReturnType<typeof exportCase>> | { name: string; error: string })[] = [];
	for (const c of plan.cases) {
		try {
			const r = await exportCase(gpu, root, c);
			cases.push(r);
			log(
				`export ${c.name}: steps ${r.steps.map((s) => s.step).join(',')}, exact ${r.exportedExact}, ` +
					`merged ${r.merge.merged} tensors, effect ${r.effect.toFixed(3)}, ` +
					`merged vs lora ${r.mergedVsLora.toExponential(2)}`
			);
		} catch (error) {
			cases.push({ name: c.name, error: errorText(error) });
			log(`export ${c.name}: FAILED ${errorText(error).split('\n')[0]}`);
		}
	}
	return {
		tool: 'tabrl export round trip, TabRL half (tools/parity/export-roundtrip.ts)',
		date: new Date().toISOString(),
		device: gpu.adapter,
		cases,
		pass: cases.every((c) => 'exportedExact' in c && c.exportedExact)
	};
}

async function main(): Promise<number> {
	const args = process.argv.slice(2);
	const [mode, root] = args;
	if (!['export', 'selftest'].includes(mode) || !root || root.startsWith('-')) {
		console.error(USAGE);
		return 2;
	}
	const flag = (name: string) => {
		const i = args.indexOf(name);
		return i >= 0 ? args[i + 1] : undefined;
	};
	const layers = flag('--layers');
	const numLayers = layers === undefined ? undefined : Number(layers);
	if (numLayers !== undefined && !(Number.isInteger(numLayers) && numLayers >= 1)) {
		console.error(`--layers needs an integer >= 1\n${USAGE}`);
		return 2;
	}
	const only = flag('--cases')?.split(',');
	const plan = makeExportPlan({ tiny: args.includes('--tiny'), numLayers, only });
	if (plan.cases.length === 0) {
		console.error(`--cases names no case\n${USAGE}`);
		return 2;
	}
	const gpu = await acquireGpu();
	log(`device: ${gpu.adapter.vendor} ${gpu.adapter.architecture} ${gpu.adapter.description}`);
	try {
		const exported = await runExportCases(gpu, root, plan);
		if (mode === 'export') {
			process.stdout.write(JSON.stringify(exported, null, 1) + '\n');
			return exported.pass ? 0 : 1;
		}
		const standIn = exported.pass
			? await checkStandIn(root)
			: { cases: [], pass: false, error: 'the export failed' };
		const report = {
			tool: 'tabrl export round trip, CPU stand-in for export_roundtrip.py (not peft)',
			export: exported,
			standIn,
			pass: exported.pass && standIn.pass
		};
		await writeFile(join(root, 'selftest-report.json'), JSON.stringify(report, null, 1) + '\n');
		process.stdout.write(JSON.stringify(report, null, 1) + '\n');
		log(report.pass ? 'PASS' : 'FAIL');
		return report.pass ? 0 : 1;
	} finally {
		gpu.destroy();
	}
}

main().then(
	(code) => process.exit(code),
	(error) => {
		process.stdout.write(JSON.stringify({ error: errorText(error) }) + '\n');
		process.exit(1);
	}
);
