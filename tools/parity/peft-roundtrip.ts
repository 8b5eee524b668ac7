/**
 * @file Entry of the PEFT round trip: TabRL's checkpoints load in peft and peft's adapters in
 * TabRL, with the same logprobs both ways. `export DIR [--tiny] [--layers N]` (models, one
 * trained LoRA each), `import DIR` (peft's adapters read and compared: one JSON report),
 * `selftest DIR [--tiny]` (the CPU stand-in between: runs anywhere). Exit 0 when all pass.
 *
 *   npx tsx tools/parity/peft-roundtrip.ts selftest /tmp/rt --tiny
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Gpu } from '../../src/lib/gpu/device';
import { errorText, makeLog, printJson, runMain } from '../tool-entry';
import {
	exportCase,
	importAdapter,
	makePlan,
	MIN_ADAPTER_EFFECT,
	readJson,
	TOLERANCE,
	writePlan,
	type Plan,
	type PythonReport
} from './peft-roundtrip-lib';
import { writeStandIn } from './peft-roundtrip-standin';
import { exportEach, parseRoundTripArgs, withGpu } from './roundtrip-entry';

const USAGE =
	'usage: peft-roundtrip (export DIR [--tiny] [--layers N] | import DIR | selftest DIR [--tiny])';
const log = makeLog('peft-roundtrip');

interface ExportReport {
	cases: (Awaited<ReturnType<typeof exportCase>> | { name: string; error: string })[];
	pass: boolean;
}

async function runExport(gpu: Gpu, root: string, plan: Plan): Promise<ExportReport> {
	await writePlan(root, plan);
	const cases: ExportReport['cases'] = await exportEach(
		plan.cases,
		(c) => exportCase(gpu, root, c),
		(r) => `step ${r.step}, files ${r.files.join(', ')}, exact ${r.readBackExact}`,
		log
	);
	const report = { cases, pass: cases.every((c) => 'readBackExact' in c && c.readBackExact) };
	await writeFile(join(root, 'export-report.json'), JSON.stringify(report, null, 1) + '\n');
	return report;
}

async function runImport(gpu: Gpu, root: string) {
	const plan = await readJson<Plan>(join(root, 'plan.json'));
	const exported = await readJson<ExportReport>(join(root, 'export-report.json'));
	const python = await readJson<PythonReport>(join(root, 'python-report.json')).catch(
		(error): PythonReport => ({
			tabrlToPeft: [],
			peftAdapters: [],
			error: `python-report.json: ${errorText(error)}`
		})
	);
	const peftToTabrl = [];
	for (const a of python.peftAdapters) {
		const c = plan.cases.find((x) => x.name === a.case);
		try {
			if (!c) throw new Error(`python-report.json names case '${a.case}', not in plan.json`);
			const r = await importAdapter(gpu, root, c, a);
			peftToTabrl.push(r);
			log(
				`import ${a.case}/${a.name}: ${r.pass ? 'pass' : 'FAIL'} lora ${r.lora_vs_peft.maxAbs.toExponential(2)}` +
					` base ${r.base_vs_peft.maxAbs.toExponential(2)} effect ${r.adapterEffect.toFixed(3)}`
			);
		} catch (error) {
			peftToTabrl.push({ case: a.case, name: a.name, error: errorText(error), pass: false });
			log(`import ${a.case}/${a.name}: FAILED ${errorText(error).split('\n')[0]}`);
		}
	}
	const expectedAdapters = plan.cases.length * plan.peftAdapters.length;
	const tabrlToPeftPass =
		python.tabrlToPeft.length === plan.cases.length &&
		python.tabrlToPeft.every((r) => r.pass === true);
	const peftToTabrlPass =
		peftToTabrl.length === expectedAdapters && peftToTabrl.every((r) => r.pass);
	return {
		tool: 'tabrl peft round trip (tools/parity/peft-roundtrip.ts + peft_roundtrip.py)',
		date: new Date().toISOString(),
		device: gpu.adapter,
		tolerance: { logprobMaxAbs: TOLERANCE, minAdapterEffect: MIN_ADAPTER_EFFECT },
		python: { versions: python.versions, error: python.error, peftErrors: python.peftErrors },
		export: exported,
		tabrlToPeft: python.tabrlToPeft,
		peftToTabrl,
		pass: exported.pass && tabrlToPeftPass && peftToTabrlPass
	};
}

async function main(): Promise<number> {
	const args = parseRoundTripArgs(process.argv.slice(2), ['export', 'import', 'selftest'], USAGE);
	if (args === 2) return 2;
	const { mode, root } = args;
	const plan = () => makePlan({ tiny: args.tiny, numLayers: args.numLayers });
	return withGpu(log, async (gpu) => {
		if (mode === 'export') {
			const report = await runExport(gpu, root, plan());
			printJson(report);
			return report.pass ? 0 : 1;
		}
		if (mode === 'selftest') {
			await runExport(gpu, root, plan());
			await writeStandIn(root);
			log('python stand-in written (CPU f64 reference, not peft)');
		}
		const report = await runImport(gpu, root);
		printJson(report);
		log(report.pass ? 'PASS' : 'FAIL');
		return report.pass ? 0 : 1;
	});
}

runMain(main);
