/**
 * @file The skinny matmul (few rows, fused epilogue) checked against its f64 reference:
 * atol 1e-5 * (sqrt(K) + scale * r) for the dot product, bias and LoRA term (rtol 1e-5);
 * SwiGLU scales it by 2.2 max(|z|, 1) plus 8 ulps; a fused norm doubles it. y starts NaN
 * where beta = 0, and columns outside a segment must come back unchanged.
 */
import type { Gpu } from '../device';
import { f16BitsToF32, f32ToF16Bits } from '../half';
import { run } from '../kernel';
import { skinnyMatmul, type SkinnySegment, type SkinnyTiling } from '../kernels/skinny';
import { Rng } from '../../util/random';
import { rmsNormRef } from '../reference/rmsnorm';
import { placeRef, skinnySegmentRef, skinnySwigluRef } from '../reference/skinny';
import { readTensor, uploadTensor, type Tensor } from '../tensor';
import type { Comparison, KernelCase } from './types';

export interface SkinnySegmentSpec {
	n: number;
	w?: 'f32' | 'f16';
	bias?: boolean;
	/** LoRA rank (0 / absent: none). */
	rank?: number;
}

export interface SkinnyCaseSpec {
	rows: number;
	k: number;
	segments: SkinnySegmentSpec[];
	/** 'each': own y per segment; 'shared': one y, segments side by side after `pad`
	 * columns; 'swiglu': two segments, out = silu(gate) * up. */
	output?: 'each' | 'shared' | 'swiglu';
	beta?: number;
	/** Shared output: columns before the first segment and after the last. */
	pad?: number;
	tiling?: Partial<SkinnyTiling>;
	/** RMS-normalise x first (random norm weight, eps 1e-6). */
	norm?: boolean;
}

function roundF16(x: Float32Array): Float32Array {
	return x.map((v) => f16BitsToF32(f32ToF16Bits(v)));
}

export function skinnyCaseName(s: SkinnyCaseSpec): string {
	const segs = s.segments
		.map(
			(g) => `${g.n}${g.w === 'f16' ? 'h' : ''}${g.bias ? '+b' : ''}${g.rank ? `+r${g.rank}` : ''}`
		)
		.join(',');
	const t = s.tiling
		? ' ' +
			Object.entries(s.tiling)
				.map(([k, v]) => `${k}=${v}`)
				.join(' ')
		: '';
	return `B=${s.rows} K=${s.k} N=[${segs}] ${s.output ?? 'each'}${s.norm ? ' norm' : ''}${s.beta ? ` beta=${s.beta}` : ''}${t}`;
}

export function skinnyCases(specs: SkinnyCaseSpec[]): KernelCase[] {
	return specs.map((spec) => ({
		family: 'skinny',
		name: skinnyCaseName(spec),
		async run(gpu: Gpu): Promise<Comparison[]> {
			const { rows: B, k: K, beta = 0 } = spec;
			const output = spec.output ?? 'each';
			const pad = spec.pad ?? 0;
			const rng = new Rng(B * 7919 + K * 131 + spec.segments.length * 17 + pad);
			const owned: Tensor[] = [];
			const up = (data: Float32Array, shape: number[], dtype: 'f32' | 'f16' = 'f32') => {
				const t = uploadTensor(gpu, data, shape, dtype);
				owned.push(t);
				return t;
			};
			const xh = rng.uniform(B * K);
			const x = up(xh, [B, K]);
			const eps = 1e-6;
			const gh = spec.norm ? rng.uniform(K) : undefined;
			const norm = gh ? { weight: up(gh, [K]), eps } : undefined;
			// What the products see: x, or rmsnorm(x) in f64.
			const xr = gh ? rmsNormRef(xh, gh, K, eps).y : xh;
			const ranks = spec.segments.map((g) => g.rank ?? 0);
			const ldxa = ranks.reduce((a, r) => a + r, 0) + 1; // one spare column: offsets matter
			const xah = rng.uniform(B * ldxa);
			const xa = ldxa > 1 ? up(xah, [B, ldxa]) : undefined;
			const scale = 1.5;
			let xaOff = 1;
			const sharedLd = spec.segments.reduce((a, g) => a + g.n, 0) + 2 * pad;
			let yOff = pad;
			const segs: SkinnySegment[] = [];
			const refs: {
				z: Float64Array;
				n: number;
				y0?: Float32Array;
				yOff: number;
				ld: number;
				t?: Tensor;
			}[] = [];
			const sharedY0 =
				beta === 0 ? new Float32Array(B * sharedLd).fill(NaN) : rng.uniform(B * sharedLd);
			// Columns of the shared output no segment writes keep their values: not NaN there.
			if (beta === 0 && output === 'shared')
				for (let i = 0; i < B; i++)
					for (let j = 0; j < sharedLd; j++)
						if (j < pad || j >= sharedLd - pad) sharedY0[i * sharedLd + j] = 7;
			const sharedY = output === 'shared' ? up(sharedY0, [B, sharedLd]) : undefined;
			for (const g of spec.segments) {
				const wt = g.w ?? 'f32';
				let wh = rng.uniform(g.n * K);
				if (wt === 'f16') wh = roundF16(wh);
				const w = up(wh, [g.n, K], wt);
				const bh = g.bias ? rng.uniform(g.n) : undefined;
				const r = g.rank ?? 0;
				const lbh = r ? rng.uniform(g.n * r) : undefined;
				const seg: SkinnySegment = { w };
				if (bh) seg.bias = up(bh, [g.n]);
				if (lbh) seg.lora = { xa: xa!, offset: xaOff, b: up(lbh, [g.n, r]), scale };
				const z = skinnySegmentRef(xr, B, K, {
					w: wh,
					n: g.n,
					bias: bh,
					lora: lbh ? { xa: xah, ldxa, offset: xaOff, b: lbh, rank: r, scale } : undefined
				});
				xaOff += r;
				if (output === 'each') {
					const y0 = beta === 0 ? new Float32Array(B * g.n).fill(NaN) : rng.uniform(B * g.n);
					seg.y = up(y0, [B, g.n]);
					refs.push({ z, n: g.n, y0, yOff: 0, ld: g.n, t: seg.y });
				} else if (output === 'shared') {
					seg.y = sharedY;
					seg.yOffset = yOff;
					refs.push({ z, n: g.n, yOff, ld: sharedLd });
					yOff += g.n;
				} else refs.push({ z, n: g.n, yOff: 0, ld: g.n });
				segs.push(seg);
			}
			const swiglu =
				output === 'swiglu'
					? up(new Float32Array(B * spec.segments[0].n).fill(NaN), [B, spec.segments[0].n])
					: undefined;
			try {
				await run(gpu, (rec) =>
					skinnyMatmul(rec, { x, segments: segs, beta, swiglu, norm, tiling: spec.tiling })
				);
				const maxRank = Math.max(0, ...ranks);
				const atol = 1e-5 * (Math.sqrt(K) + scale * maxRank + 1) * (norm ? 2 : 1);
				const tol = { atol, rtol: 1e-5 };
				if (swiglu) {
					const expected = skinnySwigluRef(refs[0].z, refs[1].z);
					let m = 1;
					for (const r of refs) for (const v of r.z) m = Math.max(m, Math.abs(v));
					return [
						{
							label: 'out',
							actual: await readTensor(swiglu),
							expected,
							atol: 2.2 * atol * m,
							rtol: 1e-5 + 8 * 6e-8
						}
					];
				}
				if (sharedY) {
					let expected: ArrayLike<number> = sharedY0;
					for (const r of refs) expected = placeRef(expected, r.z, B, r.n, r.ld, r.yOff, beta);
					return [{ label: 'y', actual: await readTensor(sharedY), expected, ...tol }];
				}
				return Promise.all(
					refs.map(async (r, i) => ({
						label: `y${i}`,
						actual: await readTensor(r.t!),
						expected: placeRef(r.y0!, r.z, B, r.n, r.ld, 0, beta),
						...tol
					}))
				);
			} finally {
				for (const t of owned) t.release();
			}
		}
	}));
}

/** The in-browser self-test: odd sizes, f16 weights, q/k/v-like fusion with bias and
 * LoRA, and SwiGLU. */
export const SKINNY_SELFTEST = skinnyCases([
	{ rows: 3, k: 37, segments: [{ n: 29 }] },
	{
		rows: 5,
		k: 64,
		segments: [
			{ n: 40, w: 'f16', bias: true, rank: 4 },
			{ n: 9, w: 'f16', bias: true, rank: 4 }
		]
	},
	{
		rows: 4,
		k: 24,
		segments: [
			{ n: 13, w: 'f16', rank: 2 },
			{ n: 13, w: 'f16', rank: 2 }
		],
		output: 'swiglu',
		norm: true
	}
]);
