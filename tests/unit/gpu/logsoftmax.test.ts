import { describe, expect, it } from 'vitest';
import { uploadChunkedMatrix } from '../../../src/lib/gpu/chunked';
import type { Gpu } from '../../../src/lib/gpu/device';
import { ShapeMismatchError } from '../../../src/lib/gpu/errors';
import { run } from '../../../src/lib/gpu/kernel';
import {
	logSoftmaxGatherBackward,
	logSoftmaxGatherForward,
	type LogSoftmaxCommon
} from '../../../src/lib/gpu/kernels/logsoftmax';
import {
	logitsRef,
	logSoftmaxGatherBackwardRef,
	logSoftmaxGatherRef
} from '../../../src/lib/gpu/reference/logsoftmax';
import { Rng } from '../../../src/lib/util/random';
import { logSoftmaxCases } from '../../../src/lib/gpu/selftest/logsoftmax';
import { createTensor, readTensor, uploadTensor, writeTensor } from '../../../src/lib/gpu/tensor';
import { itRunsCases, useGpu } from '../../helpers/gpu';

describe('logsoftmax', () => {
	const gpu = useGpu();
	itRunsCases(
		logSoftmaxCases([
			{ n: 1, c: 1, v: 1 },
			{ n: 3, c: 5, v: 2, chunkRows: 1 },
			// A budget below one row of logits still runs, one vocabulary row at a time.
			{ n: 7, c: 3, v: 5, logitsBudgetBytes: 4 },
			{ n: 5, c: 24, v: 100, chunkRows: 32 },
			// ChunkedMatrix of 30-row chunks, each split again into 20 + 10 rows.
			{ n: 20, c: 16, v: 77, chunkRows: 20, maxBytes: 30 * 16 * 4, temperature: 0.7 },
			// ChunkedMatrix chunks smaller than chunkRows: used as they are, no copies.
			{ n: 24, c: 32, v: 333, chunkRows: 500, maxBytes: 64 * 32 * 4 },
			// chunkRows from the logits budget: 37 * 4 * 40 bytes -> 40 rows per chunk.
			{ n: 37, c: 40, v: 301, logitsBudgetBytes: 37 * 4 * 40 },
			// Logits of about ±100 (stability), and ±200 at T = 0.5.
			{ n: 40, c: 64, v: 1000, chunkRows: 97, logitStd: 25 },
			{ n: 40, c: 64, v: 1000, chunkRows: 97, logitStd: 25, temperature: 0.5 },
			// Chunks wider than the workgroup (256): each invocation folds several logits.
			{ n: 16, c: 32, v: 2000, chunkRows: 700, logitStd: 25 },
			{ n: 96, c: 128, v: 3001, chunkRows: 1024, maxBytes: 1500 * 128 * 4 },
			// f16 W (matmul reads it as u32 words here: SwiftShader has no shader-f16).
			{ n: 5, c: 24, v: 100, chunkRows: 32, weight: 'f16' },
			// Even C: 30-row f16 chunks, each split into 20 + 10 (copies); N = 21 keeps matmul off its vec4 variants (compiled once more for nothing here).
			{
				n: 21,
				c: 16,
				v: 77,
				chunkRows: 20,
				maxBytes: 30 * 16 * 2,
				temperature: 0.7,
				weight: 'f16'
			},
			// Odd C: chunkRows 7 is walked as 6 (and 1 as 2), the last piece's copy rounded up.
			{ n: 6, c: 5, v: 41, chunkRows: 7, maxBytes: 17 * 5 * 2, weight: 'f16' },
			{ n: 3, c: 5, v: 9, chunkRows: 1, maxBytes: 5 * 5 * 2, weight: 'f16' },
			{ n: 3, c: 7, v: 13, chunkRows: 1, weight: 'f16' },
			{ n: 1, c: 3, v: 1, weight: 'f16' },
			{ n: 40, c: 64, v: 1000, chunkRows: 97, logitStd: 25, weight: 'f16' }
		]),
		gpu
	);

	/** Host data for the finite-difference and option tests. */
	function small(seed: number, n: number, c: number, v: number) {
		const rng = new Rng(seed);
		return {
			h: rng.normals(n * c),
			w: rng.normals(v * c, 3 / Math.sqrt(c)),
			targets: Array.from({ length: n }, (_, i) => [0, 15, 16, v - 1][i % 4] % v),
			g: rng.normals(n)
		};
	}

	/** L = sum_t g[t] logprob[t] on the GPU, with dh from the backward pass. */
	async function lossAndGrad(
		g: Gpu,
		data: ReturnType<typeof small>,
		n: number,
		c: number,
		v: number,
		opts: Partial<LogSoftmaxCommon>
	) {
		const h = uploadTensor(g, data.h, [n, c], 'f32');
		const weight = uploadChunkedMatrix(g, data.w, v, c, 'f32', 24 * c * 4);
		const targets = uploadTensor(g, data.targets, [n], 'u32');
		const gt = uploadTensor(g, data.g, [n], 'f32');
		const logprobs = createTensor(g, [n], 'f32');
		const lse = createTensor(g, [n], 'f32');
		const dh = createTensor(g, [n, c], 'f32');
		try {
			const common = { h, weight, targets, ...opts };
			await run(g, (rec) => {
				logSoftmaxGatherForward(rec, { ...common, logprobs, lse });
				logSoftmaxGatherBackward(rec, { ...common, g: gt, lse, dh });
			});
			const lp = await readTensor(logprobs);
			let loss = 0;
			for (let t = 0; t < n; t++) loss += data.g[t] * lp[t];
			return { loss, dh: await readTensor(dh) };
		} finally {
			for (const t of [h, weight, targets, gt, logprobs, lse, dh]) t.release();
		}
	}

	it('dh matches central finite differences of the GPU forward (T = 0.8, chunked W)', async () => {
		const [n, c, v] = [4, 8, 50];
		const opts = { chunkRows: 16, temperature: 0.8 };
		const data = small(11, n, c, v);
		const { dh } = await lossAndGrad(gpu(), data, n, c, v, opts);
		// f32 losses carry ~1e-6 noise: eps = 1e-2 keeps the quotient's noise ~1e-4 and the
		// O(eps^2) truncation error ~1e-4 for these O(1) curvatures; tolerance 3e-3 + 1e-2 rel.
		const eps = 1e-2;
		for (const i of [0, 9, 31]) {
			const plus = { ...data, h: data.h.slice() };
			const minus = { ...data, h: data.h.slice() };
			plus.h[i] += eps;
			minus.h[i] -= eps;
			const lp = (await lossAndGrad(gpu(), plus, n, c, v, opts)).loss;
			const lm = (await lossAndGrad(gpu(), minus, n, c, v, opts)).loss;
			const fd = (lp - lm) / (2 * eps);
			expect(Math.abs(fd - dh[i]), `dh[${i}] = ${dh[i]} vs fd ${fd}`).toBeLessThan(
				3e-3 + 1e-2 * Math.abs(fd)
			);
		}
	});

	it('the f64 reference gradient matches its own finite differences', () => {
		const [n, c, v, T] = [3, 6, 20, 0.6];
		const data = small(5, n, c, v);
		const h = Float64Array.from(data.h);
		const loss = (hh: Float64Array) => {
			const { logprobs } = logSoftmaxGatherRef(logitsRef(hh, data.w, n, c, v, T), data.targets, v);
			return logprobs.reduce((s, lp, t) => s + data.g[t] * lp, 0);
		};
		const z = logitsRef(h, data.w, n, c, v, T);
		const { lse } = logSoftmaxGatherRef(z, data.targets, v);
		const dh = logSoftmaxGatherBackwardRef(z, lse, data.targets, data.g, data.w, c, v, T);
		const eps = 1e-5;
		for (let i = 0; i < n * c; i++) {
			const hp = h.slice();
			const hm = h.slice();
			hp[i] += eps;
			hm[i] -= eps;
			expect(Math.abs((loss(hp) - loss(hm)) / (2 * eps) - dh[i])).toBeLessThan(1e-7);
		}
	});

	it('accumulate adds into dh; entropy is optional', async () => {
		const g = gpu();
		const [n, c, v] = [6, 8, 40];
		const data = small(3, n, c, v);
		const h = uploadTensor(g, data.h, [n, c], 'f32');
		const weight = uploadTensor(g, data.w, [v, c], 'f32');
		const targets = uploadTensor(g, data.targets, [n], 'u32');
		const gt = uploadTensor(g, data.g, [n], 'f32');
		const logprobs = createTensor(g, [n], 'f32');
		const lse = createTensor(g, [n], 'f32');
		const dh = createTensor(g, [n, c], 'f32');
		const once = createTensor(g, [n, c], 'f32');
		const common = { h, weight, targets, chunkRows: 7 };
		writeTensor(dh, new Float32Array(n * c).fill(1));
		await run(g, (rec) => {
			logSoftmaxGatherForward(rec, { ...common, logprobs, lse });
			logSoftmaxGatherBackward(rec, { ...common, g: gt, lse, dh: once });
			logSoftmaxGatherBackward(rec, { ...common, g: gt, lse, dh, accumulate: true });
		});
		const a = await readTensor(once);
		const b = await readTensor(dh);
		expect(b).toBeAllclose(
			a.map((x) => x + 1),
			{ atol: 1e-6, rtol: 1e-6 }
		);
		const ref = logSoftmaxGatherRef(logitsRef(data.h, data.w, n, c, v), data.targets, v);
		expect(await readTensor(logprobs)).toBeAllclose(ref.logprobs, { atol: 1e-5, rtol: 1e-5 });
		for (const t of [h, weight, targets, gt, logprobs, lse, dh, once]) t.release();
	});

	it('rejects mismatched shapes, dtypes and a bad temperature before recording anything', async () => {
		const g = gpu();
		const h = createTensor(g, [4, 8], 'f32');
		const w = createTensor(g, [10, 8], 'f32');
		const wBad = createTensor(g, [10, 7], 'f32');
		const wU = createTensor(g, [10, 8], 'u32');
		const hH = createTensor(g, [4, 8], 'f16');
		const targets = createTensor(g, [4], 'u32');
		const targetsBad = createTensor(g, [3], 'u32');
		const targetsF = createTensor(g, [4], 'f32');
		const out = createTensor(g, [4], 'f32');
		const outBad = createTensor(g, [5], 'f32');
		const dhBad = createTensor(g, [4, 7], 'f32');
		const fwd = (o: Partial<Parameters<typeof logSoftmaxGatherForward>[1]>) =>
			run(g, (rec) =>
				logSoftmaxGatherForward(rec, { h, weight: w, targets, logprobs: out, lse: out, ...o })
			);
		await expect(fwd({ weight: wBad })).rejects.toThrow(ShapeMismatchError);
		await expect(fwd({ weight: wU })).rejects.toThrow(ShapeMismatchError); // f32 or f16 only
		await expect(fwd({ h: hH })).rejects.toThrow(ShapeMismatchError); // h is f32
		await expect(fwd({ targets: targetsBad })).rejects.toThrow(ShapeMismatchError);
		await expect(fwd({ targets: targetsF })).rejects.toThrow(ShapeMismatchError);
		await expect(fwd({ logprobs: outBad })).rejects.toThrow(ShapeMismatchError);
		await expect(fwd({ entropy: outBad })).rejects.toThrow(ShapeMismatchError);
		await expect(fwd({ temperature: 0 })).rejects.toThrow(RangeError);
		await expect(fwd({ chunkRows: 0 })).rejects.toThrow(RangeError);
		await expect(
			run(g, (rec) =>
				logSoftmaxGatherBackward(rec, { h, weight: w, targets, g: out, lse: out, dh: dhBad })
			)
		).rejects.toThrow(ShapeMismatchError);
		for (const t of [h, w, wBad, wU, hH, targets, targetsBad, targetsF, out, outBad, dhBad])
			t.release();
	});
});
