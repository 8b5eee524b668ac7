/**
 * @file "peft loads ours": for each case of scripts/parity/model_parity.py's output, load the
 * case's model and peft adapter into TabRL, take one real AdamW step on it (dLoss/dlogprobs =
 * the case's w, lr 1e-2, so the adapter is TabRL-trained and differs from peft's), score the
 * case's batch with it, and export it as a checkpoint (grpo/checkpoint.ts) into
 * OUT/<case>/tabrl-checkpoint/. scripts/parity/peft_load_tabrl.py then loads that folder with
 * `PeftModel.from_pretrained` and compares its logprobs with ours (OUT/<case>/tabrl-logprobs.json).
 * Also checked here: the exported files read back into a fresh TabRL model score the same,
 * bit for bit (the TabRL side of the round trip). Prints ONE JSON report.
 *
 *   python3 scripts/parity/model_parity.py /tmp/parity
 *   npx tsx scripts/parity/peft-export.ts /tmp/parity       # (device: .gpu/peft-export.mjs)
 *   python3 scripts/parity/peft_load_tabrl.py /tmp/parity > $OUT/peft-roundtrip.json
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { acquireGpu } from '../../src/lib/gpu/device';
import { exportTabrlCheckpoint } from './peft-export-case';
import type { Manifest } from './parity-runner';

async function main(): Promise<number> {
	const root = process.argv[2];
	if (!root) {
		console.error('usage: peft-export DIR   (DIR from model_parity.py)');
		return 2;
	}
	const manifest = JSON.parse(await readFile(join(root, 'manifest.json'), 'utf8')) as Manifest;
	const gpu = await acquireGpu();
	const cases = [];
	for (const c of manifest.cases) {
		try {
			cases.push(await exportTabrlCheckpoint(gpu, root, c));
			console.error(`[peft-export] ${c.name}: exported`);
		} catch (error) {
			cases.push({ name: c.name, error: String((error as Error)?.stack ?? error) });
		}
	}
	gpu.destroy();
	const pass = cases.every((c) => 'tabrlRoundTripMaxAbs' in c && c.tabrlRoundTripMaxAbs === 0);
	process.stdout.write(
		JSON.stringify(
			{
				tool: 'tabrl peft export',
				date: new Date().toISOString(),
				device: gpu.adapter,
				pass,
				cases
			},
			null,
			1
		) + '\n'
	);
	return pass ? 0 : 1;
}

main().then(
	(code) => process.exit(code),
	(error) => {
		process.stdout.write(JSON.stringify({ error: String(error?.stack ?? error) }) + '\n');
		process.exit(1);
	}
);
