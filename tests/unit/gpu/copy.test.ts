import { describe, expect, it } from 'vitest';
import { ShapeMismatchError } from '../../../src/lib/gpu/errors';
import { Recorder } from '../../../src/lib/gpu/kernel';
import { copyColumns } from '../../../src/lib/gpu/kernels/copy';
import { copyCases } from '../../../src/lib/gpu/selftest/copy';
import { createTensor } from '../../../src/lib/gpu/tensor';
import { itRunsCases, useGpu } from '../../helpers/gpu';

describe('copy', () => {
	const gpu = useGpu();
	itRunsCases(
		copyCases([
			{ rows: 1, n: 1, m: 1, offset: 0 },
			{ rows: 4, n: 7, m: 20, offset: 0 },
			{ rows: 4, n: 7, m: 20, offset: 13 },
			// 32 rows of the last chunk of a 49152-token vocabulary cut in 3: several workgroups.
			{ rows: 32, n: 16384, m: 49152, offset: 32768 }
		]),
		gpu
	);

	it('rejects blocks that do not fit, other dtypes and aliasing', () => {
		const g = gpu();
		const src = createTensor(g, [3, 5], 'f32');
		const dst = createTensor(g, [3, 9], 'f32');
		const dst4 = createTensor(g, [4, 9], 'f32');
		const u = createTensor(g, [3, 9], 'u32');
		const rec = new Recorder(g); // never submitted
		for (const bad of [
			{ src, dst, offset: 5 },
			{ src, dst, offset: -1 },
			{ src, dst, offset: 0.5 },
			{ src, dst: dst4, offset: 0 },
			{ src, dst: u, offset: 0 },
			{ src: dst, dst, offset: 0 }
		])
			expect(() => copyColumns(rec, bad)).toThrow(ShapeMismatchError);
		copyColumns(rec, { src, dst, offset: 4 });
		for (const t of [src, dst, dst4, u]) t.release();
	});
});
