import { describe, expect, it } from 'vitest';
import { ShapeMismatchError } from '../../../src/lib/gpu/errors';
import { Recorder, run } from '../../../src/lib/gpu/kernel';
import { addBias, addInPlace } from '../../../src/lib/gpu/kernels/add';
import { addCases } from '../../../src/lib/gpu/selftest/add';
import { createTensor, readTensor, uploadTensor } from '../../../src/lib/gpu/tensor';
import { itRunsCases, useGpu } from '../../helpers/gpu';

describe('add', () => {
	const gpu = useGpu();
	itRunsCases(
		addCases([
			{ rows: 1, cols: 1 },
			{ rows: 5, cols: 255, alpha: 2.5 },
			{ rows: 7, cols: 257, alpha: -1 },
			// A Qwen2.5-0.5B-sized residual stream: 512 tokens x 896.
			{ rows: 512, cols: 896 }
		]),
		gpu
	);

	it('adds exactly one f32 rounding with alpha = 1 (as torch x + y)', async () => {
		const g = gpu();
		const xs = [1, 2 ** -24, 1e30, -3.5];
		const ys = [2 ** -24, 1, -1e30, 0.25];
		const x = uploadTensor(g, xs, [4], 'f32');
		const y = uploadTensor(g, ys, [4], 'f32');
		await run(g, (rec) => addInPlace(rec, { x, y }));
		const out = await readTensor(y);
		expect(Array.from(out)).toEqual(
			xs.map((v, i) => Math.fround(Math.fround(v) + Math.fround(ys[i])))
		);
		x.release();
		y.release();
	});

	it('rejects mismatched sizes, wrong dtypes and aliasing', () => {
		const g = gpu();
		const y = createTensor(g, [4, 8], 'f32');
		const x = createTensor(g, [4, 7], 'f32');
		const u = createTensor(g, [4, 8], 'u32');
		const bias = createTensor(g, [7], 'f32');
		const rec = new Recorder(g); // never submitted: every call must throw first
		for (const attempt of [
			() => addInPlace(rec, { x, y }),
			() => addInPlace(rec, { x: u, y }),
			() => addInPlace(rec, { x: y, y }),
			() => addBias(rec, { bias, y }),
			() => addBias(rec, { bias: y.view([32]), y })
		])
			expect(attempt).toThrow(ShapeMismatchError);
		for (const t of [y, x, u, bias]) t.release();
	});
});
