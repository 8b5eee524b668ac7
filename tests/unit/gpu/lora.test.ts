import { describe, expect, it } from 'vitest';
import type { Gpu } from '../../../src/lib/gpu/device';
import { ShapeMismatchError } from '../../../src/lib/gpu/errors';
import { run } from '../../../src/lib/gpu/kernel';
import { loraBackward, loraForward } from '../../../src/lib/gpu/kernels/lora';
import { loraCases, loraInputs, type LoraSize } from '../../../src/lib/gpu/selftest/lora';
import { createTensor, readTensor, uploadTensor, type Tensor } from '../../../src/lib/gpu/tensor';
import { itRunsCases, useGpu } from '../../helpers/gpu';

describe('lora', () => {
	const gpu = useGpu();
	itRunsCases(
		loraCases([
			{ n: 1, inFeatures: 1, outFeatures: 1, rank: 1 },
			{ n: 5, inFeatures: 13, outFeatures: 11, rank: 3 },
			{ n: 33, inFeatures: 96, outFeatures: 80, rank: 8, alpha: 16 },
			{ n: 257, inFeatures: 576, outFeatures: 192, rank: 8, alpha: 16 },
			// SmolLM2-135M's MLP up projection (576 -> 1536), rank 8.
			{ n: 200, inFeatures: 576, outFeatures: 1536, rank: 8, alpha: 32 },
			// Long reductions over tokens for dA and dB (K = N = 1500), rank 16.
			{ n: 1500, inFeatures: 72, outFeatures: 60, rank: 16, alpha: 16 }
		]),
		gpu
	);

	/** Uploads one size's inputs; `b` replaces B when given. */
	function upload(g: Gpu, s: LoraSize, host = loraInputs(s), b?: Float32Array) {
		const { n, inFeatures: inF, outFeatures: outF, rank: r } = s;
		return {
			host,
			x: uploadTensor(g, host.x, [n, inF], 'f32'),
			a: uploadTensor(g, host.a, [r, inF], 'f32'),
			b: uploadTensor(g, b ?? host.b, [outF, r], 'f32'),
			y: uploadTensor(g, host.y0, [n, outF], 'f32'),
			xa: createTensor(g, [n, r], 'f32'),
			dy: uploadTensor(g, host.dy, [n, outF], 'f32'),
			dA: createTensor(g, [r, inF], 'f32'),
			dB: createTensor(g, [outF, r], 'f32'),
			dx: uploadTensor(g, host.dx0, [n, inF], 'f32')
		};
	}
	const releaseAll = (o: Record<string, unknown>) =>
		Object.values(o).forEach((t) => (t as Partial<Tensor>).release?.());

	it('dA and dB match finite differences of sum(dy * y) through the GPU forward', async () => {
		const g = gpu();
		const s = { n: 6, inFeatures: 10, outFeatures: 7, rank: 3 };
		const scale = 5 / 3;
		const base = upload(g, s);
		await run(g, (rec) => {
			loraForward(rec, { ...base, scale });
			loraBackward(rec, { ...base, scale });
		});
		const dA = await readTensor(base.dA);
		const dB = await readTensor(base.dB);
		releaseAll(base);
		const loss = async (a: Float32Array, b: Float32Array) => {
			const t = upload(g, s, { ...base.host, a }, b);
			await run(g, (rec) => loraForward(rec, { ...t, scale }));
			const y = await readTensor(t.y);
			releaseAll(t);
			return y.reduce((acc, v, i) => acc + v * base.host.dy[i], 0);
		};
		// The loss is linear in A and in B, so a large step has no truncation error and
		// keeps f32 rounding (~1e-6 of the loss) small in the quotient: tolerance 1e-3.
		const eps = 0.25;
		for (const i of [0, 13, 29]) {
			const ap = base.host.a.slice();
			const am = base.host.a.slice();
			ap[i] += eps;
			am[i] -= eps;
			const fd = ((await loss(ap, base.host.b)) - (await loss(am, base.host.b))) / (2 * eps);
			expect(Math.abs(fd - dA[i]), `dA[${i}] ${dA[i]} vs ${fd}`).toBeLessThan(
				1e-3 * (1 + Math.abs(fd))
			);
		}
		for (const i of [0, 8, 20]) {
			const bp = base.host.b.slice();
			const bm = base.host.b.slice();
			bp[i] += eps;
			bm[i] -= eps;
			const fd = ((await loss(base.host.a, bp)) - (await loss(base.host.a, bm))) / (2 * eps);
			expect(Math.abs(fd - dB[i]), `dB[${i}] ${dB[i]} vs ${fd}`).toBeLessThan(
				1e-3 * (1 + Math.abs(fd))
			);
		}
	});

	it('B = 0 leaves y bit for bit unchanged (and gives dA = 0)', async () => {
		const g = gpu();
		const s = { n: 17, inFeatures: 40, outFeatures: 24, rank: 8 };
		const t = upload(g, s, undefined, new Float32Array(24 * 8));
		await run(g, (rec) => {
			loraForward(rec, { ...t, scale: 2 });
			loraBackward(rec, { ...t, scale: 2 });
		});
		expect(Array.from(await readTensor(t.y))).toEqual(Array.from(t.host.y0));
		expect(Array.from(await readTensor(t.dA)).every((v) => v === 0)).toBe(true);
		expect(Array.from(await readTensor(t.dB)).some((v) => v !== 0)).toBe(true);
		releaseAll(t);
	});

	it('accumulating over two micro-batches equals one call over the concatenated batch', async () => {
		const g = gpu();
		const [n1, n2] = [9, 14];
		const dimsOf = (n: number) => ({ n, inFeatures: 24, outFeatures: 20, rank: 4 });
		const all = loraInputs(dimsOf(n1 + n2), 3);
		const slice = (n0: number, n: number) => ({
			...all,
			x: all.x.slice(n0 * 24, (n0 + n) * 24),
			y0: all.y0.slice(n0 * 20, (n0 + n) * 20),
			dy: all.dy.slice(n0 * 20, (n0 + n) * 20),
			dx0: all.dx0.slice(n0 * 24, (n0 + n) * 24)
		});
		const whole = upload(g, dimsOf(n1 + n2), all);
		const p1 = upload(g, dimsOf(n1), slice(0, n1));
		const p2 = upload(g, dimsOf(n2), slice(n1, n2));
		const scale = 0.5;
		await run(g, (rec) => {
			loraForward(rec, { ...whole, scale });
			loraBackward(rec, { ...whole, scale });
			loraForward(rec, { ...p1, scale });
			loraForward(rec, { ...p2, scale });
			loraBackward(rec, { ...p1, scale });
			loraBackward(rec, { ...p2, scale, dA: p1.dA, dB: p1.dB, accumulate: true });
		});
		// Same sums, split in two: only the f32 summation order differs.
		const tol = { atol: 1e-5, rtol: 1e-5 };
		expect(await readTensor(p1.dA)).toBeAllclose(await readTensor(whole.dA), tol);
		expect(await readTensor(p1.dB)).toBeAllclose(await readTensor(whole.dB), tol);
		releaseAll(whole);
		releaseAll(p1);
		releaseAll(p2);
	});

	it('flattens leading dims: x [2, 3, in]', async () => {
		const g = gpu();
		const s = { n: 6, inFeatures: 5, outFeatures: 4, rank: 2 };
		const t = upload(g, s);
		const flat = upload(g, s);
		await run(g, (rec) => {
			loraForward(rec, { ...t, x: t.x.view([2, 3, 5]), y: t.y.view([2, 3, 4]), scale: 1 });
			loraForward(rec, { ...flat, scale: 1 });
		});
		expect(await readTensor(t.y)).toEqual(await readTensor(flat.y));
		releaseAll(t);
		releaseAll(flat);
	});

	it('rejects mismatched shapes and dtypes before recording anything', async () => {
		const g = gpu();
		const s = { n: 4, inFeatures: 6, outFeatures: 5, rank: 2 };
		const t = upload(g, s);
		const bad = {
			aWide: createTensor(g, [2, 7], 'f32'),
			bRank: createTensor(g, [5, 3], 'f32'),
			y: createTensor(g, [4, 6], 'f32'),
			xa: createTensor(g, [4, 3], 'f32'),
			dA: createTensor(g, [2, 5], 'f32'),
			dB: createTensor(g, [5, 2], 'u32'),
			dx: createTensor(g, [4, 5], 'f32'),
			xF16: createTensor(g, [4, 6], 'f16')
		};
		const fwd = (o: object) => run(g, (rec) => loraForward(rec, { ...t, scale: 1, ...o }));
		const bwd = (o: object) => run(g, (rec) => loraBackward(rec, { ...t, scale: 1, ...o }));
		await expect(fwd({ a: bad.aWide })).rejects.toThrow(ShapeMismatchError);
		await expect(fwd({ b: bad.bRank })).rejects.toThrow(ShapeMismatchError);
		await expect(fwd({ y: bad.y })).rejects.toThrow(ShapeMismatchError);
		await expect(fwd({ xa: bad.xa })).rejects.toThrow(ShapeMismatchError);
		await expect(fwd({ x: bad.xF16 })).rejects.toThrow(ShapeMismatchError);
		await expect(fwd({ scale: NaN })).rejects.toThrow(RangeError);
		await expect(bwd({ dA: bad.dA })).rejects.toThrow(ShapeMismatchError);
		await expect(bwd({ dB: bad.dB })).rejects.toThrow(ShapeMismatchError);
		await expect(bwd({ dx: bad.dx })).rejects.toThrow(ShapeMismatchError);
		await expect(bwd({ dy: bad.y })).rejects.toThrow(ShapeMismatchError);
		releaseAll(t);
		releaseAll(bad);
	});
});
