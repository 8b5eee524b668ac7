import { describe, expect, it } from 'vitest';
import { ShapeMismatchError } from '../../../src/lib/gpu/errors';
import { Recorder } from '../../../src/lib/gpu/kernel';
import {
	copyColumns,
	copyRowSpans,
	sumRowSpans,
	uploadRowSpans,
	uploadRowSpansWithin,
	uploadSumGroups
} from '../../../src/lib/gpu/kernels/copy';
import {
	copyCases,
	rowSpanCases,
	rowSpanWithinCases,
	sumSpanCases
} from '../../../src/lib/gpu/selftest/copy';
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
	itRunsCases(
		rowSpanCases([
			{ srcRows: 1, dstRows: 1, width: 1, spans: [{ src: 0, dst: 0, rows: 1 }] },
			// empty spans write nothing; spans may overlap in src and come in any order
			{
				srcRows: 6,
				dstRows: 9,
				width: 3,
				spans: [
					{ src: 4, dst: 0, rows: 2 },
					{ src: 0, dst: 5, rows: 0 },
					{ src: 1, dst: 4, rows: 5 }
				]
			},
			// a prefill group of 33 prompts padded to 7 into sequences 2..34 of 12 slots
			// (SmolLM2-135M's kv row, 3 x 64): more than one workgroup per span
			{
				srcRows: 33 * 7,
				dstRows: 40 * 12,
				width: 192,
				spans: Array.from({ length: 33 }, (_, g) => ({
					src: g * 7,
					dst: (2 + g) * 12,
					rows: 1 + (g % 7)
				}))
			},
			// each prompt's last row into the decode batch's rows
			{
				srcRows: 12,
				dstRows: 5,
				width: 33,
				spans: [
					{ src: 3, dst: 1, rows: 1 },
					{ src: 4, dst: 2, rows: 1 },
					{ src: 11, dst: 3, rows: 1 }
				]
			}
		]),
		gpu
	);

	itRunsCases(
		sumSpanCases([
			{ srcRows: 1, width: 1, rows: 1, groups: [[0]] },
			// a group without members is zeros; members may overlap and repeat
			{ srcRows: 10, width: 3, rows: 4, groups: [[6, 0, 1], [], [2, 2]] },
			// 3 prefixes of 40 rows continued by 64 sequences of 40 + 60 rows (tabrl-tiny's kv
			// row, 256): several workgroups per group
			{
				srcRows: 64 * 100,
				width: 256,
				rows: 40,
				groups: [0, 1, 2].map((g) =>
					Array.from({ length: 64 }, (_, b) => b)
						.filter((b) => b % 3 === g)
						.map((b) => b * 100)
				)
			}
		]),
		gpu
	);

	itRunsCases(
		rowSpanWithinCases([
			{ rows: 1, width: 1, spans: [] },
			// 3 prefixes of 40 slots into 61 of 64 sequences of 100 slots (tabrl-tiny's kv row)
			{
				rows: 64 * 100,
				width: 256,
				spans: Array.from({ length: 64 }, (_, b) => b)
					.filter((b) => b >= 3)
					.map((b) => ({ src: (b % 3) * 100, dst: b * 100, rows: 40 }))
			}
		]),
		gpu
	);

	it('rejects spans within one buffer that write a row another reads', () => {
		const g = gpu();
		for (const spans of [
			[{ src: 0, dst: 2, rows: 3 }],
			[
				{ src: 0, dst: 4, rows: 2 },
				{ src: 4, dst: 8, rows: 1 }
			],
			[{ src: 0, dst: 9, rows: 2 }]
		])
			expect(() => uploadRowSpansWithin(g, spans, 10)).toThrow(ShapeMismatchError);
	});

	it('rejects sums of blocks outside src, and tensors unlike the groups', () => {
		const g = gpu();
		const bad: [number[][], number][] = [
			[[[7]], 4],
			[[[-1]], 1],
			[[[0.5]], 1],
			[[], 1],
			[[[0]], 0]
		];
		for (const [groups, rows] of bad)
			expect(() => uploadSumGroups(g, groups, rows, 10)).toThrow(ShapeMismatchError);
		const groups = uploadSumGroups(g, [[0, 5], [2]], 4, 10);
		const src = createTensor(g, [10, 3], 'f32');
		const dst = createTensor(g, [8, 3], 'f32');
		const short = createTensor(g, [7, 3], 'f32');
		const u = createTensor(g, [8, 3], 'u32');
		const rec = new Recorder(g); // never submitted
		for (const bad of [
			{ src, dst: short, width: 3, groups },
			{ src, dst: u, width: 3, groups },
			{ src, dst, width: 2, groups },
			{ src: dst, dst, width: 3, groups }
		])
			expect(() => sumRowSpans(rec, bad)).toThrow(ShapeMismatchError);
		sumRowSpans(rec, { src, dst, width: 3, groups });
		for (const t of [groups.tensor, src, dst, short, u]) t.release();
	});

	it('rejects row spans outside either tensor, and tensors unlike the spans', () => {
		const g = gpu();
		for (const bad of [
			{ src: 5, dst: 0, rows: 2 },
			{ src: 0, dst: 8, rows: 2 },
			{ src: -1, dst: 0, rows: 1 },
			{ src: 0, dst: 0, rows: 1.5 },
			{ src: 0, dst: 0, rows: -1 }
		])
			expect(() => uploadRowSpans(g, [bad], 6, 9)).toThrow(ShapeMismatchError);
		const spans = uploadRowSpans(g, [{ src: 0, dst: 0, rows: 6 }], 6, 9);
		const src = createTensor(g, [6, 4], 'f32');
		const dst = createTensor(g, [9, 4], 'f32');
		const short = createTensor(g, [8, 4], 'f32');
		const u = createTensor(g, [9, 4], 'u32');
		const rec = new Recorder(g); // never submitted
		for (const bad of [
			{ src, dst: short, width: 4, spans },
			{ src, dst: u, width: 4, spans },
			{ src, dst, width: 3, spans },
			{ src: dst, dst, width: 4, spans }
		])
			expect(() => copyRowSpans(rec, bad)).toThrow(ShapeMismatchError);
		copyRowSpans(rec, { src, dst, width: 4, spans });
		for (const t of [spans.tensor, src, dst, short, u]) t.release();
	});

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
