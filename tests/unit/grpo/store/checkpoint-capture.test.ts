/**
 * captureCheckpoint (grpo/store/checkpoint.ts) reads the adapter's weights and AdamW moments in
 * one batched readback (LoraParameters.readWithState): what it captures equals the values
 * uploaded and the same tensors read back one by one (readTensor), for every module; it
 * takes one staging buffer and one submit, not one per tensor. Each tensor holds values of
 * its own (a seed per name and kind), so a tensor sliced out at a wrong offset mismatches.
 */
import { describe, expect, it, vi } from 'vitest';
import { Rng } from '../../../../src/lib/util/random';
import { readTensor } from '../../../../src/lib/gpu/tensor';
import { applyCheckpoint, captureCheckpoint } from '../../../../src/lib/grpo/store/checkpoint';
import { LoraOptimizer } from '../../../../src/lib/grpo/optimizer';
import { LoraParameters, peftName } from '../../../../src/lib/model/transformer/lora';
import { useGpu } from '../../../helpers/gpu';
import { TINY } from '../../model/tiny-models';

describe('captureCheckpoint', () => {
	const gpu = useGpu();

	it('captures params and moments in one readback, equal to the tensors read one by one', async () => {
		const g = gpu();
		const config = TINY.qwen2; // hidden 36, kv 12, mlp 56: A and B of many sizes
		const lora = LoraParameters.create(g, config, { rank: 3, alpha: 6 }, 7);
		const optimizer = new LoraOptimizer(g, lora);
		try {
			const values = (kind: number) =>
				new Map(
					lora.modules.flatMap((m, j) =>
						(['A', 'B'] as const).map((which, w) => {
							const n = which === 'A' ? m.a.size : m.b.size;
							return [
								peftName(m.layer, m.module, which),
								new Rng(1000 * kind + 2 * j + w).normals(n, kind + 1)
							] as const;
						})
					)
				);
			const params = values(0);
			const m = values(1);
			const v = new Map([...values(2)].map(([k, x]) => [k, x.map(Math.abs)]));
			lora.write(params);
			lora.writeState(m, v);
			optimizer.restoreStep(5, 9);

			const createBuffer = vi.spyOn(g.device, 'createBuffer');
			const submit = vi.spyOn(g.device.queue, 'submit');
			let saved;
			try {
				saved = await captureCheckpoint(lora, optimizer, {
					baseModel: 'tiny-qwen2',
					modelConfig: config
				});
				expect(createBuffer).toHaveBeenCalledTimes(1);
				expect(submit).toHaveBeenCalledTimes(1);
			} finally {
				createBuffer.mockRestore();
				submit.mockRestore();
			}
			expect([saved.step, saved.updates]).toEqual([5, 9]);
			expect(saved.params).toEqual(params);
			expect(saved.optimizer).toEqual({ m, v });

			// The old path: each tensor with its own staging buffer and mapAsync.
			for (const mod of lora.modules)
				for (const [which, p, mt, vt] of [
					['A', mod.a, mod.mA, mod.vA],
					['B', mod.b, mod.mB, mod.vB]
				] as const) {
					const name = peftName(mod.layer, mod.module, which);
					expect(saved.params.get(name)).toEqual(await readTensor(p));
					expect(saved.optimizer!.m.get(name)).toEqual(await readTensor(mt));
					expect(saved.optimizer!.v.get(name)).toEqual(await readTensor(vt));
				}
			// read() and readState() alone give the same maps.
			expect(await lora.read()).toEqual(params);
			expect(await lora.readState()).toEqual({ m, v });
			// Applied to a fresh optimizer: both counts come back (AdamW's t for its bias
			// correction); a checkpoint without `updates` made one update a step.
			const fresh = new LoraOptimizer(g, lora);
			applyCheckpoint(lora, fresh, saved);
			expect([fresh.step, fresh.updates]).toEqual([5, 9]);
			applyCheckpoint(lora, fresh, { ...saved, updates: undefined });
			expect([fresh.step, fresh.updates]).toEqual([5, 5]);
			fresh.release();
		} finally {
			optimizer.release();
			lora.release();
		}
	});
});
