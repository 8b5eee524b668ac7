import { describe, expect, it } from 'vitest';
import { createChunkedMatrix } from '../../../src/lib/gpu/chunked';
import { ShapeMismatchError } from '../../../src/lib/gpu/errors';
import { Recorder, run } from '../../../src/lib/gpu/kernel';
import {
	embeddingBackward,
	embeddingForward,
	uploadTokenIds
} from '../../../src/lib/gpu/kernels/embedding';
import { Rng } from '../../../src/lib/util/random';
import { embeddingCases } from '../../../src/lib/gpu/selftest/embedding';
import { createTensor, readTensor, uploadTensor } from '../../../src/lib/gpu/tensor';
import { itRunsCases, useGpu } from '../../helpers/gpu';

describe('embedding', () => {
	const gpu = useGpu();
	itRunsCases(
		embeddingCases([
			{ tokens: 1, vocab: 1, cols: 1, ids: 'same' },
			{ tokens: 1, vocab: 3, cols: 5, chunkRows: 1, ids: 'random', badIds: 1 },
			{ tokens: 300, vocab: 50, cols: 37, chunkRows: 7, ids: 'random', values: 'dyadic' },
			{ tokens: 777, vocab: 1000, cols: 64, chunkRows: 300, ids: 'few', badIds: 5 },
			// One id 1500 times: one workgroup sums 6 mask tiles; exact with dyadic values.
			{ tokens: 1500, vocab: 40, cols: 257, chunkRows: 16, ids: 'same', values: 'dyadic' },
			// C > 1024: two column passes of the backward.
			{ tokens: 65, vocab: 9, cols: 1100, chunkRows: 4, ids: 'few', badIds: 3 },
			{ tokens: 2000, vocab: 3000, cols: 128, ids: 'random' },
			// Near the brief's largest batch: 8192 tokens, Qwen2.5's hidden size, 3 chunks.
			{ tokens: 8192, vocab: 600, cols: 896, chunkRows: 250, ids: 'random', values: 'dyadic' },
			// f16 W (two halves per u32 word): C = 1, odd rows straddling words, a plain tensor
			// of odd size, chunks of an odd element count, and a realistic width.
			{ tokens: 9, vocab: 5, cols: 1, ids: 'random', badIds: 1, weight: 'f16' },
			{ tokens: 300, vocab: 50, cols: 37, chunkRows: 7, ids: 'random', weight: 'f16' },
			{ tokens: 65, vocab: 9, cols: 3, ids: 'few', badIds: 2, weight: 'f16' },
			{ tokens: 777, vocab: 1000, cols: 64, chunkRows: 300, ids: 'few', badIds: 5, weight: 'f16' }
		]),
		gpu
	);

	it('covers dispatches of more than 65535 workgroups (folded into y)', async () => {
		// 2^24 + 1000 lookups of C = 1: 65540 workgroups of 256, over the per-dimension limit.
		const g = gpu();
		const n = 65536 * 256 + 1000;
		const idsh = new Uint32Array(n);
		for (let t = 0; t < n; t++) idsh[t] = (t * 7) % 1001;
		const ids = uploadTensor(g, idsh, [n], 'u32');
		const wh = Float32Array.from({ length: 1001 }, (_, i) => i * 0.5);
		const weight = uploadTensor(g, wh, [1001, 1], 'f32');
		const out = createTensor(g, [n, 1], 'f32');
		await run(g, (rec) => embeddingForward(rec, { ids, weight, out }));
		const r = await readTensor(out);
		let wrong = 0;
		for (let t = 0; t < n; t++) if (r[t] !== wh[idsh[t]]) wrong++;
		expect(wrong).toBe(0);
		for (const t of [ids, weight, out]) t.release();
	});

	it('gives the same dW bits on every run (deterministic scatter-add)', async () => {
		const g = gpu();
		const rng = new Rng(3);
		const [n, v, c] = [1200, 20, 33];
		const ids = uploadTensor(g, rng.ints(n, v), [n], 'u32');
		const dy = uploadTensor(g, rng.normals(n * c), [n, c], 'f32');
		const results: Float32Array[] = [];
		for (let r = 0; r < 2; r++) {
			const dWeight = createTensor(g, [v, c], 'f32');
			await run(g, (rec) => embeddingBackward(rec, { ids, dy, dWeight }));
			results.push(await readTensor(dWeight));
			dWeight.release();
		}
		expect(results[1]).toEqual(results[0]);
		ids.release();
		dy.release();
	});

	it('rejects host ids outside the vocabulary before uploading', () => {
		const g = gpu();
		expect(() => uploadTokenIds(g, [0, 5, 10], 10)).toThrow(ShapeMismatchError);
		expect(() => uploadTokenIds(g, [-1], 10)).toThrow(ShapeMismatchError);
		expect(() => uploadTokenIds(g, [1.5], 10)).toThrow(ShapeMismatchError);
		const ok = uploadTokenIds(g, [0, 9], 10);
		expect(ok.shape).toEqual([2]);
		ok.release();
	});

	it('rejects mismatched shapes and dtypes', () => {
		const g = gpu();
		const ids = createTensor(g, [4], 'u32');
		const idsF = createTensor(g, [4], 'f32');
		const w = createTensor(g, [10, 8], 'f32');
		const w3 = createTensor(g, [2, 5, 8], 'f32');
		const wc = createChunkedMatrix(g, 10, 8, 'f32', 3 * 8 * 4);
		const wcU = createChunkedMatrix(g, 10, 8, 'u32', 3 * 8 * 4);
		const wcH = createChunkedMatrix(g, 10, 8, 'f16', 3 * 8 * 2);
		const wH = createTensor(g, [10, 8], 'f16');
		const out = createTensor(g, [4, 8], 'f32');
		const outBad = createTensor(g, [4, 7], 'f32');
		const status = createTensor(g, [1], 'u32');
		const statusBad = createTensor(g, [2], 'u32');
		const rec = new Recorder(g); // never submitted
		const fwd = [
			{ ids: idsF, weight: w, out },
			{ ids, weight: w3, out },
			{ ids, weight: wcU as never, out },
			{ ids, weight: wc, out: outBad },
			{ ids, weight: w, out, status: statusBad }
		];
		for (const args of fwd) expect(() => embeddingForward(rec, args)).toThrow(ShapeMismatchError);
		const bwd = [
			{ ids: idsF, dy: out, dWeight: wc },
			{ ids, dy: outBad, dWeight: w },
			{ ids, dy: out, dWeight: w3 },
			{ ids, dy: out, dWeight: w, status: statusBad },
			// dW is f32 only: f16 W is for the lookup.
			{ ids, dy: out, dWeight: wcH },
			{ ids, dy: out, dWeight: wH }
		];
		for (const args of bwd) expect(() => embeddingBackward(rec, args)).toThrow(ShapeMismatchError);
		embeddingForward(rec, { ids, weight: wc, out, status }); // valid
		embeddingForward(rec, { ids, weight: wcH, out }); // valid: an f16 W
		embeddingForward(rec, { ids, weight: wH, out }); // valid
		for (const t of [ids, idsF, w, w3, wc, wcU, wcH, wH, out, outBad, status, statusBad])
			t.release();
	});
});
