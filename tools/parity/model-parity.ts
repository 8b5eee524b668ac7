/**
 * @file Entry of the model parity check (TabRL against transformers + peft): scores the
 * cases model_parity.py wrote and prints ONE JSON report (parity-runner.ts says what is
 * compared); exit 0 when every case is within tolerance.
 *
 *   python3 tools/parity/model_parity.py /tmp/parity && npx tsx tools/parity/model-parity.ts /tmp/parity [--only NAME ...]
 */
import { makeLog, printJson, runMain } from '../tool-entry';
import { runParity } from './parity-runner';
import { withGpu } from './roundtrip-entry';

const log = makeLog('model-parity');

async function main(): Promise<number> {
	const args = process.argv.slice(2);
	const dir = args[0];
	if (!dir || dir.startsWith('-')) {
		console.error('usage: model-parity DIR [--only NAME ...]   (DIR from model_parity.py)');
		return 2;
	}
	const onlyAt = args.indexOf('--only');
	const only = onlyAt >= 0 ? args.slice(onlyAt + 1) : undefined;
	return withGpu(log, async (gpu) => {
		const report = await runParity(gpu, dir, { only, log });
		printJson({
			tool: 'tabrl model parity (tools/parity/model-parity.ts)',
			date: new Date().toISOString(),
			node: process.version,
			device: gpu.adapter,
			features: gpu.features,
			...report
		});
		log(`${report.pass ? 'PASS' : 'FAIL'}: ${JSON.stringify(report.worstByArchitecture)}`);
		return report.pass ? 0 : 1;
	});
}

runMain(main);
