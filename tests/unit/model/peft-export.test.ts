/**
 * The TS half of "peft loads ours" (scripts/parity/peft-export-case.ts) on a directory laid
 * out as model_parity.py writes it (parity-dir.ts): after one AdamW step the exported
 * checkpoint holds PEFT's two files plus the optimizer and trainer state, reads back into a
 * fresh model with identical logprobs, and is accepted by our own strict PEFT reader. The
 * Python half (peft_load_tabrl.py) runs on the GPU machine, where peft is.
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportTabrlCheckpoint } from '../../../scripts/parity/peft-export-case';
import type { Manifest } from '../../../scripts/parity/parity-runner';
import { parsePeftAdapterConfig } from '../../../src/lib/model/peft-adapter';
import { useGpu } from '../../helpers/gpu';
import { LOCAL_PARITY_CASES, writeParityDir } from './parity-dir';

describe('TabRL checkpoint export for peft', () => {
	const gpu = useGpu();
	let root: string;
	beforeAll(async () => {
		root = await mkdtemp(join(tmpdir(), 'tabrl-peft-export-'));
		await writeParityDir(root, [LOCAL_PARITY_CASES[0]]);
	});
	afterAll(() => rm(root, { recursive: true, force: true }));

	it('exports a trained adapter that reads back exactly', async () => {
		const manifest = JSON.parse(await readFile(join(root, 'manifest.json'), 'utf8')) as Manifest;
		const c = manifest.cases[0];
		const r = await exportTabrlCheckpoint(gpu(), root, c);
		expect(r.tabrlRoundTripMaxAbs).toBe(0);
		expect(r.optimizerStep).toBe(1);
		expect(r.gradNorm).toBeGreaterThan(0);
		const dir = join(root, c.name, 'tabrl-checkpoint');
		expect((await readdir(dir)).sort()).toEqual([
			'adapter_config.json',
			'adapter_model.safetensors',
			'optimizer.safetensors',
			'trainer_state.json'
		]);
		const config = parsePeftAdapterConfig(await readFile(join(dir, 'adapter_config.json'), 'utf8'));
		expect(config.rank).toBe(LOCAL_PARITY_CASES[0].rank);
		const ours = JSON.parse(await readFile(join(root, c.name, 'tabrl-logprobs.json'), 'utf8'));
		expect(ours.logprobs.filter((v: number | null) => v !== null).length).toBeGreaterThan(0);
	}, 120_000);
});
