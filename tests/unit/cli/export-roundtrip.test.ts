/**
 * The TabRL half of the export round trip (tools/parity/export-roundtrip*.ts) on
 * SwiftShader, tiny sizes, with its CPU stand-in for the PyTorch half: the zip holds exactly
 * the run's files, the unzipped adapter decodes to the trained weights bit for bit with only
 * keys peft knows, the merged folder is W + (alpha / r) B A (f64, 1e-5 relative), and
 * TabRL's logprobs match the f64 reference within 1e-4, moved by the adapter 100x that.
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { exportCase } from '../../../tools/parity/export-roundtrip-lib';
import {
	expectedZipEntries,
	makeExportPlan,
	MIN_ADAPTER_EFFECT,
	TOLERANCE,
	TRAINED_STEP,
	writeExportPlan,
	type ExportPlan,
	type TabrlLogprobs
} from '../../../tools/parity/export-roundtrip-plan';
import { checkStandIn } from '../../../tools/parity/export-roundtrip-standin';
import { openCheckpointFromDirectory } from '../../../src/lib/model/hf/node/checkpoint';
import { readPeftAdapter } from '../../../src/lib/model/hf/peft-adapter';
import { memoryByteSource } from '../../../src/lib/model/hf/byte-source';
import { peftName } from '../../../src/lib/model/transformer/lora';
import { projectionPath, projectionShape } from '../../../src/lib/model/hf/weight-spec';
import { useGpu } from '../../helpers/gpu';

describe('export round trip (TabRL half, CPU stand-in for peft)', () => {
	const gpu = useGpu();
	let root: string | undefined;
	afterAll(() => root && rm(root, { recursive: true, force: true }));

	it('writes the zip, the unzipped adapter, the merged folder and logprobs that check out', async () => {
		root = await mkdtemp(join(tmpdir(), 'tabrl-export-rt-'));
		const plan: ExportPlan = makeExportPlan({ tiny: true });
		expect(plan.cases.map((c) => c.name)).toEqual(['llama', 'qwen2']);
		await writeExportPlan(root, plan);
		for (const c of plan.cases) {
			const r = await exportCase(gpu(), root, c);
			expect(
				r.steps.map((s) => s.step),
				c.name
			).toEqual([1, TRAINED_STEP]);
			expect(r.exportedExact, c.name).toBe(true);
			expect(r.importedSteps, c.name).toEqual([1, 2]);
			expect(r.zipEntries, c.name).toEqual(expectedZipEntries(c));
			expect(r.merge, c.name).toEqual({
				step: TRAINED_STEP,
				tensors: expect.any(Number),
				merged: 14
			});
		}

		const standIn = await checkStandIn(root);
		for (const c of standIn.cases) {
			expect(c.zipEntries.ok, c.name).toBe(true);
			expect(c.adapterConfig, c.name).toMatchObject({ unknownKeys: [], ok: true });
			expect(c.merge, c.name).toMatchObject({ changedOthers: [], filesAsBase: true, ok: true });
			expect(c.merge.worstRatio, c.name).toBeLessThanOrEqual(1);
			for (const k of ['lora', 'base', 'merged', 'mergedVsLora'] as const) {
				expect(c[k].maxAbs, `${c.name} ${k}`).toBeLessThanOrEqual(TOLERANCE);
				expect(c[k].missing, `${c.name} ${k}`).toBe(0);
			}
			expect(c.adapterEffect, c.name).toBeGreaterThanOrEqual(MIN_ADAPTER_EFFECT);
		}
		expect(standIn.pass).toBe(true);

		// The files the Python side reads, checked here without the lib's own checks.
		const at = (p: string) => join(root!, p);
		for (const c of plan.cases) {
			expect((await readdir(at(c.paths.adapter))).sort()).toEqual([
				'adapter_config.json',
				'adapter_model.safetensors',
				'optimizer.safetensors',
				'trainer_state.json'
			]);
			const configText = await readFile(join(at(c.paths.adapter), 'adapter_config.json'), 'utf8');
			expect(JSON.parse(configText)).toMatchObject({
				peft_type: 'LORA',
				task_type: 'CAUSAL_LM',
				base_model_name_or_path: c.baseRepoId,
				r: c.lora.rank,
				lora_alpha: c.lora.alpha
			});
			const logprobs = JSON.parse(await readFile(at(c.paths.logprobs), 'utf8')) as TabrlLogprobs;
			for (const k of ['base', 'lora', 'merged'] as const)
				expect(logprobs[k].map((row) => row.length)).toEqual(c.sequences.map((s) => s.length - 1));

			const before = await openCheckpointFromDirectory(at(c.paths.base));
			const after = await openCheckpointFromDirectory(at(c.paths.merged));
			const { config } = before;
			const adapter = await readPeftAdapter(
				config,
				configText,
				memoryByteSource(
					new Uint8Array(await readFile(join(at(c.paths.adapter), 'adapter_model.safetensors')))
				)
			);
			const scale = c.lora.alpha / c.lora.rank;
			for (let layer = 0; layer < config.numLayers; layer++)
				for (const m of c.lora.targets) {
					const name = `${projectionPath(layer, m)}.weight`;
					const [out, inF] = projectionShape(config, m);
					const w = await before.weights.readF32(name);
					const a = adapter.params.get(peftName(layer, m, 'A'))!;
					const b = adapter.params.get(peftName(layer, m, 'B'))!;
					const want = new Float64Array(out * inF);
					for (let o = 0; o < out; o++)
						for (let i = 0; i < inF; i++) {
							let s = 0;
							for (let k = 0; k < c.lora.rank; k++) s += b[o * c.lora.rank + k] * a[k * inF + i];
							want[o * inF + i] = w[o * inF + i] + scale * s;
						}
					expect(await after.weights.readF32(name), `${c.name} ${name}`).toBeAllclose(want, {
						rtol: 1e-5,
						atol: 1e-6
					});
				}
		}
	});
});
