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
import type { Gpu } from '../../src/lib/gpu/device';
import { makeLog, printJson, runMain } from '../tool-entry';
import { exportCase } from './export-roundtrip-lib';
import { makeExportPlan, writeExportPlan, type ExportPlan } from './export-roundtrip-plan';
import { checkStandIn } from './export-roundtrip-standin';
import { exportEach, parseRoundTripArgs, withGpu } from './roundtrip-entry';

const USAGE =
	'usage: export-roundtrip (export|selftest) DIR [--tiny] [--layers N] [--cases llama,qwen2]';
const log = makeLog('export-roundtrip');

async function runExportCases(gpu: Gpu, root: string, plan: ExportPlan) {
	await writeExportPlan(root, plan);
	const cases = await exportEach(
		plan.cases,
		(c) => exportCase(gpu, root, c),
		(r) =>
			`steps ${r.steps.map((s) => s.step).join(',')}, exact ${r.exportedExact}, ` +
			`merged ${r.merge.merged} tensors, effect ${r.effect.toFixed(3)}, ` +
			`merged vs lora ${r.mergedVsLora.toExponential(2)}`,
		log
	);
	return {
		tool: 'tabrl export round trip, TabRL half (tools/parity/export-roundtrip.ts)',
		date: new Date().toISOString(),
		device: gpu.adapter,
		cases,
		pass: cases.every((c) => 'exportedExact' in c && c.exportedExact)
	};
}

async function main(): Promise<number> {
	const args = parseRoundTripArgs(process.argv.slice(2), ['export', 'selftest'], USAGE);
	if (args === 2) return 2;
	const { mode, root } = args;
	const only = args.option('cases')?.split(',');
	const plan = makeExportPlan({ tiny: args.tiny, numLayers: args.numLayers, only });
	if (plan.cases.length === 0) {
		console.error(`--cases names no case\n${USAGE}`);
		return 2;
	}
	return withGpu(log, async (gpu) => {
		const exported = await runExportCases(gpu, root, plan);
		if (mode === 'export') {
			printJson(exported);
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
		printJson(report);
		log(report.pass ? 'PASS' : 'FAIL');
		return report.pass ? 0 : 1;
	});
}

runMain(main);
