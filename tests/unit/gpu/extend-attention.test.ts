import { describe, expect, it } from 'vitest';
import { ShapeMismatchError } from '../../../src/lib/gpu/errors';
import { run } from '../../../src/lib/gpu/kernel';
import { extendAttention, extendBlocks } from '../../../src/lib/gpu/kernels/extend-attention';
import { extendBlockRows } from '../../../src/lib/gpu/kernels/extend-attention.wgsl';
import { extendAttentionCases } from '../../../src/lib/gpu/selftest/extend-attention';
import { createTensor, uploadTensor } from '../../../src/lib/gpu/tensor';
import { itRunsCases, useGpu } from '../../helpers/gpu';

describe('extend attention', () => {
	const gpu = useGpu();
	itRunsCases(
		extendAttentionCases([
			// The tiny test models' heads (GQA 4/2 of 8: blocks of 8 rows); one row at key 0.
			{ B: 1, S: 9, Hq: 4, Hkv: 2, D: 8, suffixes: [{ sequence: 0, start: 0, rows: 1 }] },
			// 10 rows (blocks of 8 and 2) over two tiles of keys, sequences out of order, one
			// cache row not queried, a row at the cache's last slot.
			{
				B: 3,
				S: 140,
				Hq: 4,
				Hkv: 2,
				D: 16,
				suffixes: [
					{ sequence: 2, start: 70, rows: 10 },
					{ sequence: 0, start: 3, rows: 3 },
					{ sequence: 2, start: 139, rows: 1 }
				]
			},
			// Qwen2.5-0.5B's heads (14 over 2 of 64: blocks of 2 rows), an odd run.
			{ B: 2, S: 80, Hq: 14, Hkv: 2, D: 64, suffixes: [{ sequence: 1, start: 40, rows: 5 }] },
			// A head of 128 (two columns per invocation), 16-row blocks; D = 80 and a scale.
			{ B: 2, S: 90, Hq: 8, Hkv: 8, D: 128, suffixes: [{ sequence: 0, start: 50, rows: 20 }] },
			{
				B: 2,
				S: 66,
				Hq: 6,
				Hkv: 3,
				D: 80,
				suffixes: [{ sequence: 1, start: 60, rows: 6 }],
				scale: 0.3
			},
			// Positions past the cache's end are capped at S - 1.
			{ B: 1, S: 10, Hq: 2, Hkv: 2, D: 8, suffixes: [{ sequence: 0, start: 8, rows: 4 }] }
		]),
		gpu
	);

	it('blocks: runs cut into the rows one workgroup scores, never across a run', () => {
		expect(extendBlockRows(16, 2)).toBe(8);
		expect(extendBlockRows(64, 7)).toBe(2);
		expect(extendBlockRows(128, 1)).toBe(16);
		const runs = [
			{ first: 0, rows: 10 },
			{ first: 10, rows: 3 },
			{ first: 13, rows: 1 }
		];
		expect([...extendBlocks(runs, 16, 2)]).toEqual([0, 8, 8, 2, 10, 3, 13, 1]);
		expect([...extendBlocks(runs, 64, 7)]).toEqual([
			0, 2, 2, 2, 4, 2, 6, 2, 8, 2, 10, 2, 12, 1, 13, 1
		]);
	});

	it('refuses mismatched shapes', async () => {
		const g = gpu();
		const cache = createTensor(g, [1, 8, 2, 8], 'f32');
		const q = createTensor(g, [3, 4, 8], 'f32');
		const u32 = (n: number) => uploadTensor(g, new Array(n).fill(0), [n], 'u32');
		const ok = { q, k: cache, v: cache, positions: u32(3), sequences: u32(3), blocks: u32(2) };
		const out = createTensor(g, [3, 4, 8], 'f32');
		await expect(
			run(g, (rec) => extendAttention(rec, { ...ok, positions: u32(2), out }))
		).rejects.toThrow(ShapeMismatchError);
		await expect(
			run(g, (rec) => extendAttention(rec, { ...ok, blocks: u32(3), out }))
		).rejects.toThrow(/blocks must be u32 \[nb, 2\]/);
		await expect(run(g, (rec) => extendAttention(rec, { ...ok, out: q }))).rejects.toThrow(
			/out must be/
		);
	});
});
