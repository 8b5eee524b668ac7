/**
 * @file LoRA forward and backward checked against the f64 reference. Every output is an
 * f32 matmul, so atol is 1e-5 of each output's largest |expected| entry (seen: 1.7e-6, dA
 * over N = 1024 tokens), rtol 1e-5.
 */
import type { Gpu } from '../device';
import { run } from '../kernel';
import { loraBackward, loraForward } from '../kernels/lora';
import type { Tolerance } from '../reference/allclose';
import { loraBackwardRef, loraForwardRef } from '../reference/lora';
import { Rng } from '../../util/random';
import { readTensor, uploadTensor } from '../tensor';
import type { KernelCase } from './types';

export function loraTolerance(expected: ArrayLike<number>): Tolerance {
	let m = 0;
	for (let i = 0; i < expected.length; i++) m = Math.max(m, Math.abs(expected[i]));
	return { atol: 1e-5 * Math.max(m, 1e-3), rtol: 1e-5 };
}

export interface LoraSize {
	n: number;
	inFeatures: number;
	outFeatures: number;
	rank: number;
	/** LoRA alpha; scale = alpha / rank. Default 2 * rank. */
	alpha?: number;
}

/** Seeded host inputs; B is random (not PEFT's zero init) so every path is exercised. */
export function loraInputs(s: LoraSize, seed = 0) {
	const rng = new Rng(seed + s.n * 7919 + s.inFeatures * 31 + s.outFeatures * 17 + s.rank);
	return {
		x: rng.normals(s.n * s.inFeatures),
		a: rng.normals(s.rank * s.inFeatures, 1 / Math.sqrt(s.inFeatures)),
		b: rng.normals(s.outFeatures * s.rank, 0.5),
		y0: rng.normals(s.n * s.outFeatures),
		dy: rng.normals(s.n * s.outFeatures),
		dx0: rng.normals(s.n * s.inFeatures)
	};
}

export function loraCases(sizes: LoraSize[]): KernelCase[] {
	return sizes.map((s) => ({
		family: 'lora',
		name: `forward+backward N=${s.n} in=${s.inFeatures} out=${s.outFeatures} r=${s.rank}`,
		async run(gpu: Gpu) {
			const { n, inFeatures: inF, outFeatures: outF, rank: r } = s;
			const scale = (s.alpha ?? 2 * r) / r;
			const h = loraInputs(s);
			const x = uploadTensor(gpu, h.x, [n, inF], 'f32');
			const a = uploadTensor(gpu, h.a, [r, inF], 'f32');
			const b = uploadTensor(gpu, h.b, [outF, r], 'f32');
			const y = uploadTensor(gpu, h.y0, [n, outF], 'f32');
			const dy = uploadTensor(gpu, h.dy, [n, outF], 'f32');
			const dx = uploadTensor(gpu, h.dx0, [n, inF], 'f32');
			// dA, dB start as garbage: without `accumulate` they must be overwritten.
			const dA = uploadTensor(gpu, new Float32Array(r * inF).fill(7), [r, inF], 'f32');
			const dB = uploadTensor(gpu, new Float32Array(outF * r).fill(7), [outF, r], 'f32');
			const xa = uploadTensor(gpu, new Float32Array(n * r).fill(7), [n, r], 'f32');
			try {
				await run(gpu, (rec) => {
					loraForward(rec, { x, a, b, scale, y, xa });
					loraBackward(rec, { x, a, b, scale, xa, dy, dA, dB, dx });
				});
				const dims = { n, inFeatures: inF, outFeatures: outF, rank: r };
				const fwd = loraForwardRef(h.x, h.a, h.b, scale, dims);
				const bwd = loraBackwardRef(h.x, h.a, h.b, scale, h.dy, dims);
				const yRef = fwd.delta.map((v, i) => v + h.y0[i]);
				const dxRef = bwd.dx.map((v, i) => v + h.dx0[i]);
				const out = [
					['y', y, yRef],
					['xa', xa, fwd.xa],
					['dA', dA, bwd.dA],
					['dB', dB, bwd.dB],
					['dx', dx, dxRef]
				] as const;
				return Promise.all(
					out.map(async ([label, t, expected]) => ({
						label,
						actual: await readTensor(t),
						expected,
						...loraTolerance(expected)
					}))
				);
			} finally {
				for (const t of [x, a, b, y, dy, dx, dA, dB, xa]) t.release();
			}
		}
	}));
}

/** The in-browser self-test: odd sizes, and rank 8 on a wider layer. */
export const LORA_SELFTEST = loraCases([
	{ n: 5, inFeatures: 13, outFeatures: 11, rank: 3 },
	{ n: 33, inFeatures: 96, outFeatures: 80, rank: 8, alpha: 16 }
]);
