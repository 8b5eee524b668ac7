import { describe, expect, it } from 'vitest';
import { OverLimitError, ShapeMismatchError } from '../../../src/lib/gpu/errors';
import { Recorder, run } from '../../../src/lib/gpu/kernel';
import { attentionForward } from '../../../src/lib/gpu/kernels/attention';
import { decodeAttention, decodeSplitPlan } from '../../../src/lib/gpu/kernels/decode-attention';
import { DECODE_WG } from '../../../src/lib/gpu/kernels/decode-attention.wgsl';
import { Rng } from '../../../src/lib/util/random';
import { decodeAttentionCases } from '../../../src/lib/gpu/selftest/decode-attention';
import { createTensor, readTensor, uploadTensor } from '../../../src/lib/gpu/tensor';
import { itRunsCases, useGpu } from '../../helpers/gpu';

describe('decode attention', () => {
	const gpu = useGpu();
	itRunsCases(
		decodeAttentionCases([
			{ B: 1, S: 1, Hq: 1, Hkv: 1, D: 1, positions: [0] },
			// Tiny test models' heads: D 8 (GQA 4/2), D 12 (3/1), D 16 (4/1).
			{ B: 3, S: 9, Hq: 4, Hkv: 2, D: 8, positions: [0, 4, 8] },
			{ B: 2, S: 20, Hq: 3, Hkv: 1, D: 12, positions: [19, 6] },
			{ B: 2, S: 130, Hq: 4, Hkv: 1, D: 16, positions: [129, 64], splits: 3 },
			// Positions at and past the cache's end are capped at S - 1.
			{ B: 2, S: 10, Hq: 2, Hkv: 2, D: 8, positions: [10, 500] },
			// One split over several tiles (written straight to out); many splits each of one tile.
			{ B: 2, S: 300, Hq: 8, Hkv: 2, D: 64, positions: [299, 150], splits: 1 },
			{ B: 2, S: 300, Hq: 8, Hkv: 2, D: 64, positions: [299, 150], splits: 5 },
			// Qwen2.5-0.5B's heads (14 over 2 of 64); Llama's 128 (2 columns per invocation);
			// 256, a non-multiple of the workgroup (D = 80) and a custom scale.
			{ B: 4, S: 400, Hq: 14, Hkv: 2, D: 64, positions: [399, 0, 127, 128] },
			{ B: 2, S: 100, Hq: 8, Hkv: 8, D: 128, positions: [99, 42] },
			{ B: 1, S: 70, Hq: 2, Hkv: 1, D: 256, positions: [69] },
			{ B: 2, S: 66, Hq: 6, Hkv: 3, D: 80, positions: [65, 64], scale: 0.3 },
			// Indexed: rows of a suffix over cached prefixes, several per sequence, in any
			// order, one sequence not queried; over several splits, and in one (the pass
			// writes out itself, no combine).
			...[2, 1].map((splits) => ({
				B: 3,
				S: 140,
				Hq: 4,
				Hkv: 2,
				D: 16,
				positions: [70, 71, 72, 3, 139, 5],
				sequences: [2, 2, 2, 0, 2, 0],
				splits
			}))
		]),
		gpu
	);

	it('split plan: whole tiles, none empty, enough workgroups at batch 1', () => {
		for (const [B, Hkv, S] of [
			[1, 2, 384],
			[32, 3, 384],
			[1, 1, 1],
			[8, 2, 32768],
			[1, 3, 65]
		]) {
			const { splits, splitKeys } = decodeSplitPlan(B, Hkv, S);
			expect(splitKeys % DECODE_WG).toBe(0);
			expect(splits * splitKeys).toBeGreaterThanOrEqual(S);
			expect((splits - 1) * splitKeys).toBeLessThan(S); // the last split has keys
		}
		expect(decodeSplitPlan(1, 2, 384).splits).toBe(6); // one tile each: 6 tiles
		expect(decodeSplitPlan(64, 8, 384).splits).toBe(1); // 512 workgroups already
		expect(decodeSplitPlan(1, 1, 1000, 2)).toEqual({ splits: 2, splitKeys: 512 });
	});

	it('equals the prefill attention kernel on the last row of each sequence', async () => {
		// The causal attention of a sequence's last token over its whole prefix is exactly
		// what a decode step computes: two independent kernels, one answer.
		const g = gpu();
		const rng = new Rng(4);
		const [B, T, Hq, Hkv, D] = [2, 37, 6, 2, 16];
		const lengths = [37, 20];
		const q = uploadTensor(g, rng.normals(B * T * Hq * D), [B, T, Hq, D], 'f32');
		const k = uploadTensor(g, rng.normals(B * T * Hkv * D), [B, T, Hkv, D], 'f32');
		const v = uploadTensor(g, rng.normals(B * T * Hkv * D), [B, T, Hkv, D], 'f32');
		const out = createTensor(g, [B, T, Hq, D], 'f32');
		const lse = createTensor(g, [B, Hq, T], 'f32');
		const len = uploadTensor(g, lengths, [B], 'u32');
		await run(g, (rec) => attentionForward(rec, { q, k, v, out, lse, lengths: len }));
		const full = await readTensor(out);
		const qh = await readTensor(q);
		const qLast = new Float32Array(B * Hq * D);
		const expected = new Float32Array(B * Hq * D);
		for (let b = 0; b < B; b++) {
			const row = (b * T + lengths[b] - 1) * Hq * D;
			qLast.set(qh.subarray(row, row + Hq * D), b * Hq * D);
			expected.set(full.subarray(row, row + Hq * D), b * Hq * D);
		}
		const q1 = uploadTensor(g, qLast, [B, 1, Hq, D], 'f32');
		const out1 = createTensor(g, [B, 1, Hq, D], 'f32');
		const pos = uploadTensor(
			g,
			lengths.map((n) => n - 1),
			[B],
			'u32'
		);
		await run(g, (rec) => decodeAttention(rec, { q: q1, k, v, positions: pos, out: out1 }));
		expect(await readTensor(out1)).toBeAllclose(expected, { atol: 2e-6, rtol: 1e-5 });
		for (const t of [q, k, v, out, lse, len, q1, out1, pos]) t.release();
	});

	it('rejects bad shapes, dtypes and head sizes', () => {
		const g = gpu();
		const q = createTensor(g, [2, 4, 8], 'f32');
		const q3 = createTensor(g, [2, 3, 8], 'f32');
		const qT = createTensor(g, [2, 2, 4, 8], 'f32');
		const cache = createTensor(g, [2, 5, 2, 8], 'f32');
		const cacheU = createTensor(g, [2, 5, 2, 8], 'u32');
		const pos = createTensor(g, [2], 'u32');
		const posF = createTensor(g, [2], 'f32');
		const out = createTensor(g, [2, 4, 8], 'f32');
		const rec = new Recorder(g); // never submitted
		const ok = { q, k: cache, v: cache, positions: pos, out };
		for (const bad of [
			{ ...ok, q: q3 },
			{ ...ok, q: qT },
			{ ...ok, v: cacheU },
			{ ...ok, positions: posF },
			{ ...ok, out: q3 },
			{ ...ok, out: q }
		])
			expect(() => decodeAttention(rec, bad)).toThrow(ShapeMismatchError);
		expect(() => decodeAttention(rec, { ...ok, splits: 0 })).toThrow(RangeError);
		const big = createTensor(g, [1, 1, 2, 300], 'f32');
		const qBig = createTensor(g, [1, 2, 300], 'f32');
		// D = 300 > 256: more than the split pass keeps per invocation.
		const pos1 = createTensor(g, [1], 'u32');
		const outBig = createTensor(g, [1, 2, 300], 'f32');
		expect(() =>
			decodeAttention(rec, { q: qBig, k: big, v: big, positions: pos1, out: outBig })
		).toThrow(OverLimitError);
		decodeAttention(rec, ok);
		for (const t of [q, q3, qT, cache, cacheU, pos, posF, out, big, qBig, pos1, outBig])
			t.release();
	});
});
