import { describe, expect, it } from 'vitest';
import { ShapeMismatchError } from '../../../src/lib/gpu/errors';
import { run } from '../../../src/lib/gpu/kernel';
import { rmsNormForward } from '../../../src/lib/gpu/kernels/rmsnorm';
import { rmsNormCases } from '../../../src/lib/gpu/selftest/rmsnorm';
import { createTensor } from '../../../src/lib/gpu/tensor';
import { itRunsCases, useGpu } from '../../helpers/gpu';

describe('rmsnorm', () => {
	const gpu = useGpu();
	itRunsCases(
		rmsNormCases([
			// workgroups of 32, 64, 128 and 256 by width (rmsNormWorkgroup), each at its edges
			{ rows: 1, cols: 1 },
			{ rows: 9, cols: 32 },
			{ rows: 5, cols: 128 },
			{ rows: 3, cols: 129 },
			{ rows: 7, cols: 255 },
			{ rows: 33, cols: 257 },
			{ rows: 2, cols: 512 },
			{ rows: 2, cols: 513 },
			{ rows: 64, cols: 896 },
			{ rows: 16, cols: 2048 }
		]),
		gpu
	);

	it('rejects a weight that does not match the row width', async () => {
		const g = gpu();
		const x = createTensor(g, [4, 8], 'f32');
		const weight = createTensor(g, [7], 'f32');
		const y = createTensor(g, [4, 8], 'f32');
		const rstd = createTensor(g, [4], 'f32');
		await expect(
			run(g, (rec) => rmsNormForward(rec, { x, weight, y, rstd, eps: 1e-6 }))
		).rejects.toThrow(ShapeMismatchError);
		for (const t of [x, weight, y, rstd]) t.release();
	});
});
