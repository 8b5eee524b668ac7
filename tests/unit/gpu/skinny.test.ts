import { describe, expect, it } from 'vitest';
import { ShapeMismatchError } from '../../../src/lib/gpu/errors';
import { run } from '../../../src/lib/gpu/kernel';
import { skinnyMatmul } from '../../../src/lib/gpu/kernels/skinny';
import { skinnyCases } from '../../../src/lib/gpu/selftest/skinny';
import { createTensor } from '../../../src/lib/gpu/tensor';
import { itRunsCases, useGpu } from '../../helpers/gpu';

describe('skinny matmul', () => {
	const gpu = useGpu();
	itRunsCases(
		skinnyCases([
			{ rows: 1, k: 1, segments: [{ n: 1 }] },
			// Odd K (scalar loads), f32 and f16, beta accumulation.
			{ rows: 3, k: 37, segments: [{ n: 29 }] },
			{ rows: 3, k: 37, segments: [{ n: 29, w: 'f16' }], beta: 1 },
			// Vector loads (K % 8 == 0), B = 8, more rows than a pass holds (33: passes of 16).
			{ rows: 8, k: 96, segments: [{ n: 45, w: 'f16' }] },
			{ rows: 33, k: 40, segments: [{ n: 11, bias: true }], beta: 0.5 },
			// q / k / v: three weights, bias and LoRA, own outputs.
			{
				rows: 8,
				k: 64,
				segments: [
					{ n: 40, w: 'f16', bias: true, rank: 3 },
					{ n: 9, w: 'f16', bias: true, rank: 3 },
					{ n: 9, w: 'f16', bias: true, rank: 3 }
				]
			},
			// LoRA's A of three projections into one xa (shared output, padded columns).
			{ rows: 5, k: 72, segments: [{ n: 3 }, { n: 3 }, { n: 3 }], output: 'shared', pad: 2 },
			// lm_head chunks into one logits buffer with accumulation.
			{
				rows: 3,
				k: 24,
				segments: [
					{ n: 17, w: 'f16' },
					{ n: 6, w: 'f16' }
				],
				output: 'shared',
				beta: 1
			},
			{
				rows: 6,
				k: 48,
				segments: [
					{ n: 21, w: 'f16', rank: 2 },
					{ n: 21, w: 'f16', bias: true }
				],
				output: 'swiglu'
			},
			// RMSNorm fused: scalar f32, vector f16, swiglu, every reduction path.
			{ rows: 3, k: 37, segments: [{ n: 29, bias: true }], norm: true },
			{
				rows: 9,
				k: 64,
				segments: [
					{ n: 40, w: 'f16', rank: 2 },
					{ n: 9, w: 'f16' }
				],
				norm: true
			},
			{
				rows: 6,
				k: 48,
				segments: [
					{ n: 21, w: 'f16' },
					{ n: 21, w: 'f16' }
				],
				output: 'swiglu',
				norm: true
			},
			{
				rows: 5,
				k: 80,
				segments: [{ n: 19, w: 'f16' }],
				norm: true,
				tiling: { subgroup: 0, lanes: 8, groups: 2 }
			},
			{
				rows: 5,
				k: 80,
				segments: [{ n: 19 }],
				norm: true,
				tiling: { lanes: 16, groups: 1, cols: 3 }
			},
			// 32 rows in one pass (32 accumulators), a bench variant for B = 32.
			{
				rows: 32,
				k: 64,
				segments: [{ n: 9, w: 'f16', bias: true }],
				tiling: { rows: 32, cols: 1 }
			},
			// Tilings: workgroup-memory tree, lanes past one subgroup, one row per pass.
			{
				rows: 5,
				k: 80,
				segments: [{ n: 19, w: 'f16', rank: 2 }],
				tiling: { subgroup: 0, lanes: 8, groups: 2 }
			},
			{ rows: 5, k: 80, segments: [{ n: 19, rank: 2 }], tiling: { lanes: 16, groups: 1, cols: 3 } },
			{ rows: 5, k: 35, segments: [{ n: 19 }], tiling: { rows: 1, cols: 1, lanes: 2, groups: 4 } },
			{
				rows: 4,
				k: 64,
				segments: [{ n: 7 }, { n: 7 }],
				output: 'swiglu',
				tiling: { subgroup: 0, lanes: 4, groups: 1 }
			}
		]),
		gpu
	);

	it('rejects mismatched shapes before recording anything', async () => {
		const g = gpu();
		const x = createTensor(g, [2, 8], 'f32');
		const w = createTensor(g, [5, 9], 'f32');
		const y = createTensor(g, [2, 5], 'f32');
		await expect(run(g, (rec) => skinnyMatmul(rec, { x, segments: [{ w, y }] }))).rejects.toThrow(
			ShapeMismatchError
		);
		const w2 = createTensor(g, [6, 8], 'f32');
		await expect(
			run(g, (rec) => skinnyMatmul(rec, { x, segments: [{ w: w2, y }] }))
		).rejects.toThrow(ShapeMismatchError);
		for (const t of [x, w, y, w2]) t.release();
	});
});
