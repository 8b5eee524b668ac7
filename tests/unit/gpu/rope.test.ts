import { describe, expect, it } from 'vitest';
import { ShapeMismatchError } from '../../../src/lib/gpu/errors';
import { Recorder, run } from '../../../src/lib/gpu/kernel';
import { ropeBackward, ropeForward, ropeInvFreq } from '../../../src/lib/gpu/kernels/rope';
import { Rng } from '../../../src/lib/util/random';
import { ropeCases } from '../../../src/lib/gpu/selftest/rope';
import { createTensor, readTensor, uploadTensor } from '../../../src/lib/gpu/tensor';
import { itRunsCases, useGpu } from '../../helpers/gpu';

describe('rope', () => {
	const gpu = useGpu();
	itRunsCases(
		ropeCases([
			{ batch: 1, seq: 1, heads: 1, dim: 2, positions: 'steps' },
			{ batch: 1, seq: 1, heads: 1, dim: 2, positions: 'large' },
			{ batch: 3, seq: 7, heads: 5, dim: 64, positions: 'padded', theta: 1e6 },
			{ batch: 3, seq: 11, heads: 2, dim: 64, positions: 'steps' }, // [T] shared by B
			{ batch: 2, seq: 9, heads: 3, dim: 128, positions: 'large', inPlace: true },
			{ batch: 2, seq: 33, heads: 14, dim: 64, positions: 'offset', attentionScaling: 1.25 },
			{ batch: 1, seq: 17, heads: 2, dim: 96, positions: 'steps', rank3: true, inPlace: true },
			// Qwen2.5-0.5B's q: 14 heads of 64 over 256 tokens of 2 sequences.
			{ batch: 2, seq: 256, heads: 14, dim: 64, positions: 'large', theta: 1e6 },
			{ batch: 4, seq: 64, heads: 8, dim: 128, positions: 'padded', theta: 5e5 },
			// 4 sequences of 512 tokens of Qwen2.5-0.5B's q (1.8M values), positions to 32767.
			{ batch: 4, seq: 512, heads: 14, dim: 64, positions: 'large', theta: 1e6, inPlace: true }
		]),
		gpu
	);

	it('computes the default inv_freq as transformers does (f32, theta^(-2i/D))', () => {
		const f = ropeInvFreq(10000, 64);
		expect(f.length).toBe(32);
		expect(f[0]).toBe(1);
		expect(f[1]).toBe(Math.fround(1 / Math.fround(10000 ** (2 / 64))));
		// Every entry within 1 f32 ulp (2^-23 relative) of the real theta^(-2i/D).
		for (let i = 0; i < 32; i++)
			expect(Math.abs(f[i] / 10000 ** (-i / 32) - 1)).toBeLessThan(2 ** -23);
		expect(() => ropeInvFreq(10000, 63)).toThrow(RangeError);
	});

	it('rotates by sin and cos within 2e-7 of f64 for angles up to 1.6e6 rad', async () => {
		// x = (1, 0) in every pair gives y = (cos a, sin a): the kernel's sincos alone.
		// 2e-7: the reduction + Taylor emulated in f32 stays within 1.1e-7 (rope.wgsl.ts).
		const g = gpu();
		const rng = new Rng(11);
		const invFreqs = [1, 0.7, 0.3, 1e-3];
		const pos = new Uint32Array(8000);
		for (let t = 0; t < pos.length; t++) pos[t] = t < 5000 ? t * 7 : rng.int(1_600_000);
		const x = uploadTensor(
			g,
			Array.from({ length: 8000 * 8 }, (_, k) => (k % 8 < 4 ? 1 : 0)),
			[8000, 1, 8],
			'f32'
		);
		const positions = uploadTensor(g, pos, [8000], 'u32');
		const invFreq = uploadTensor(g, invFreqs, [4], 'f32');
		await run(g, (rec) => ropeForward(rec, { x, positions, invFreq }));
		const expected = new Float64Array(8000 * 8);
		for (let t = 0; t < 8000; t++) {
			for (let i = 0; i < 4; i++) {
				const a = Math.fround(pos[t] * Math.fround(invFreqs[i]));
				expected[t * 8 + i] = Math.cos(a);
				expected[t * 8 + 4 + i] = Math.sin(a);
			}
		}
		expect(await readTensor(x)).toBeAllclose(expected, { atol: 2e-7, rtol: 0 });
		for (const t of [x, positions, invFreq]) t.release();
	});

	it('backward undoes forward (rotation by -angle), scaled by attentionScaling^2', async () => {
		const g = gpu();
		const rng = new Rng(5);
		const shape = [2, 6, 3, 64];
		const xh = rng.normals(2 * 6 * 3 * 64);
		const x = uploadTensor(g, xh, shape, 'f32');
		const positions = uploadTensor(g, rng.ints(12, 40000), [12], 'u32');
		const invFreq = uploadTensor(g, ropeInvFreq(1e6, 64), [32], 'f32');
		const y = createTensor(g, shape, 'f32');
		await run(g, (rec) => {
			ropeForward(rec, { x, y, positions, invFreq, attentionScaling: 2 });
			ropeBackward(rec, { x: y, positions, invFreq, attentionScaling: 0.5 });
		});
		expect(await readTensor(y)).toBeAllclose(xh, { atol: 1e-6, rtol: 1e-5 });
		for (const t of [x, positions, invFreq, y]) t.release();
	});

	it('rejects bad shapes and dtypes', () => {
		const g = gpu();
		const x = createTensor(g, [2, 3, 4, 8], 'f32');
		const x2 = createTensor(g, [2, 3, 4, 6], 'f32');
		const pos = createTensor(g, [6], 'u32');
		const posT = createTensor(g, [3], 'u32');
		const posBad = createTensor(g, [5], 'u32');
		const posF32 = createTensor(g, [6], 'f32');
		const freq = createTensor(g, [4], 'f32');
		const freqBad = createTensor(g, [3], 'f32');
		const yBad = createTensor(g, [2, 3, 4, 7], 'f32');
		const rec = new Recorder(g); // never submitted
		const bad = [
			{ x, positions: posBad, invFreq: freq },
			{ x, positions: posF32, invFreq: freq },
			{ x, positions: pos, invFreq: freqBad },
			{ x: x2, positions: pos, invFreq: freq },
			{ x, y: yBad, positions: pos, invFreq: freq },
			{ x: freq, positions: pos, invFreq: freq }
		];
		for (const args of bad) {
			expect(() => ropeForward(rec, args)).toThrow(ShapeMismatchError);
			expect(() => ropeBackward(rec, args)).toThrow(ShapeMismatchError);
		}
		ropeForward(rec, { x, positions: posT, invFreq: freq }); // [T] positions are fine
		for (const t of [x, x2, pos, posT, posBad, posF32, freq, freqBad, yBad]) t.release();
	});
});
