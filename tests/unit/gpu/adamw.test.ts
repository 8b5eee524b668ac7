import { describe, expect, it } from 'vitest';
import { ShapeMismatchError } from '../../../src/lib/gpu/errors';
import { run } from '../../../src/lib/gpu/kernel';
import { adamwStep, GRAD_NORM_STATS, type AdamWSlot } from '../../../src/lib/gpu/kernels/adamw';
import { adamwCases } from '../../../src/lib/gpu/selftest/adamw';
import { createTensor, type Tensor } from '../../../src/lib/gpu/tensor';
import { itRunsCases, useGpu } from '../../helpers/gpu';

describe('adamw', () => {
	const gpu = useGpu();
	itRunsCases(
		adamwCases([
			{ sizes: [1], clip: 'off' },
			{ sizes: [7, 255, 257, 1000], clip: 'clip' },
			{ sizes: [3, 513, 16 * 1001], clip: 'loose', weightDecay: 0.01 },
			// 70001 > 256 workgroups x 256: the partial-sum loop strides; no decay.
			{ sizes: [70001, 4865, 1], clip: 'clip', weightDecay: 0 },
			{ sizes: [11, 300, 129], clip: 'clip', poison: 'nan' },
			{ sizes: [11, 300], clip: 'off', poison: 'inf' }
		]),
		gpu
	);

	function slot(n: number, gradSize = n, mDtype: 'f32' | 'u32' = 'f32'): AdamWSlot {
		const g = gpu();
		return {
			param: createTensor(g, [n], 'f32'),
			grad: createTensor(g, [gradSize], 'f32'),
			m: createTensor(g, [n], mDtype),
			v: createTensor(g, [n], 'f32')
		};
	}
	const free = (slots: AdamWSlot[], ...ts: Tensor[]) => {
		for (const s of slots) for (const t of [s.param, s.grad, s.m, s.v]) t.release();
		for (const t of ts) t.release();
	};

	it('rejects a gradient whose size differs from its parameter', async () => {
		const slots = [slot(8), slot(8, 9)];
		const stats = createTensor(gpu(), [GRAD_NORM_STATS.length], 'f32');
		await expect(run(gpu(), (rec) => adamwStep(rec, { slots, stats, step: 1 }))).rejects.toThrow(
			ShapeMismatchError
		);
		free(slots, stats);
	});

	it('rejects non-f32 state and a stats tensor of the wrong size', async () => {
		const slots = [slot(8, 8, 'u32')];
		const stats = createTensor(gpu(), [GRAD_NORM_STATS.length], 'f32');
		const small = createTensor(gpu(), [2], 'f32');
		await expect(run(gpu(), (rec) => adamwStep(rec, { slots, stats, step: 1 }))).rejects.toThrow(
			ShapeMismatchError
		);
		const ok = [slot(8)];
		await expect(
			run(gpu(), (rec) => adamwStep(rec, { slots: ok, stats: small, step: 1 }))
		).rejects.toThrow(ShapeMismatchError);
		free([...slots, ...ok], stats, small);
	});

	it('rejects bad hyperparameters before recording anything', async () => {
		const slots = [slot(4)];
		const stats = createTensor(gpu(), [GRAD_NORM_STATS.length], 'f32');
		for (const bad of [
			{ step: 0 },
			{ step: 1, beta2: 1 },
			{ step: 1, lr: NaN },
			{ step: 1, maxNorm: 0 }
		]) {
			await expect(run(gpu(), (rec) => adamwStep(rec, { slots, stats, ...bad }))).rejects.toThrow(
				RangeError
			);
		}
		free(slots, stats);
	});
});
