import { describe, expect, it } from 'vitest';
import { OverLimitError, ShapeMismatchError } from '../../../src/lib/gpu/errors';
import { run } from '../../../src/lib/gpu/kernel';
import {
	PORTABLE_WORKGROUP_BYTES,
	attentionBackward,
	attentionForward,
	chooseTiles,
	type AttentionTuning
} from '../../../src/lib/gpu/kernels/attention';
import { MAX_HEAD_DIM, tileGeometry } from '../../../src/lib/gpu/kernels/attention.wgsl';
import {
	attentionBackwardRef,
	attentionRef,
	type AttentionDims
} from '../../../src/lib/gpu/reference/attention';
import { Rng } from '../../../src/lib/util/random';
import { attentionCases, type AttentionCaseShape } from '../../../src/lib/gpu/selftest/attention';
import { createTensor, type Tensor } from '../../../src/lib/gpu/tensor';
import { itRunsCases, useGpu } from '../../helpers/gpu';

/**
 * Small tilings for most cases: more tile edges per case (tiles of 12 queries, of 8 keys),
 * odd and even padded strides, and pipelines that compile fast (SwiftShader's compile time
 * grows with a shader's workgroup memory). The default tiling is what the D = 64 cases
 * below run.
 */
const SMALL: AttentionTuning = {
	tiles: {
		forward: { rt: 3, ct: 4, bk: 8, bv: 16 },
		dq: { rt: 3, ct: 4, bk: 8, bv: 8 },
		dkdv: { rt: 2, ct: 4, bk: 4, bv: 8 }
	}
};

describe('attention', () => {
	const gpu = useGpu();
	const small = (s: AttentionCaseShape): AttentionCaseShape => ({ ...s, tuning: SMALL });
	itRunsCases(
		attentionCases([
			// edge: one query, one key
			small({ B: 1, T: 1, Hq: 1, Hkv: 1, D: 1 }),
			// T not a multiple of the query tile nor of the key tile; GQA 4/2; padding
			small({ B: 2, T: 37, Hq: 4, Hkv: 2, D: 8, lengths: [37, 23] }),
			// Hq=3 over one kv head; a sequence of length 1 and one of pure padding
			small({ B: 3, T: 37, Hq: 3, Hkv: 1, D: 8, lengths: [1, 0, 30] }),
			// several workgroups of rows; Hq = Hkv; explicit scale (larger scores)
			small({ B: 2, T: 130, Hq: 2, Hkv: 2, D: 8, lengths: [130, 67], scale: 0.7 }),
			// D=64 (SmolLM2, Qwen2.5-0.5B), default tiles: a partial second query tile
			{ B: 2, T: 70, Hq: 4, Hkv: 2, D: 64, lengths: [70, 41] },
			// D=128 (Qwen3)
			small({ B: 2, T: 37, Hq: 4, Hkv: 2, D: 128, lengths: [37, 29] }),
			// SmolLM2-135M's heads (9 over 3), default tiles, longer sequences: 5 query tiles,
			// 10 key tiles
			{ B: 2, T: 300, Hq: 9, Hkv: 3, D: 64, lengths: [300, 181] },
			// Qwen3's head size with a longer sequence
			small({ B: 1, T: 160, Hq: 4, Hkv: 2, D: 128, lengths: [150] }),
			// an odd head size (scalar loads and stores)
			small({ B: 1, T: 19, Hq: 2, Hkv: 1, D: 3 }),
			// decode with a KV cache: one query at position qOffset, lengths incl. that token
			{ B: 2, T: 1, Hq: 4, Hkv: 2, D: 64, qOffset: 45, lengths: [46, 46] },
			// decode where one sequence already ended (its query is padding)
			small({ B: 2, T: 1, Hq: 3, Hkv: 1, D: 8, qOffset: 9, lengths: [10, 6] }),
			// a chunk of queries after a cache, with spare cache rows past the chunk
			small({ B: 2, T: 5, Tk: 40, Hq: 4, Hkv: 2, D: 16, qOffset: 30, lengths: [35, 33] })
		]),
		gpu
	);

	// The default tiles' edges. On this device (32 KiB of workgroup memory) they are
	// 64 queries x 64 keys (forward, dq) and 32 keys x 64 queries (dkdv).
	describe('tile edges', () => {
		itRunsCases(
			attentionCases([
				// T not a multiple of 64 or 32, a length mid-tile; GQA 3
				{ B: 2, T: 100, Hq: 3, Hkv: 1, D: 64, lengths: [100, 65] },
				// GQA 7 (Qwen2.5-0.5B's 14/2), queries after a cache at a position that is not
				// tile-aligned, spare key rows past qOffset + T, a length short of Tk
				{ B: 1, T: 40, Tk: 97, Hq: 7, Hkv: 1, D: 64, qOffset: 50, lengths: [85] },
				// Hq = Hkv, a query chunk that straddles a key tile boundary
				{ B: 1, T: 33, Hq: 2, Hkv: 2, D: 64, qOffset: 31, lengths: [64] },
				// the same kinds of edges on the small tiles: GQA 7 and 1, a cache offset
				small({ B: 2, T: 29, Tk: 50, Hq: 7, Hkv: 1, D: 8, qOffset: 13, lengths: [50, 31] }),
				small({ B: 1, T: 26, Hq: 3, Hkv: 3, D: 8, lengths: [25] })
			]),
			gpu
		);
	});

	// The portable budget: every device grants 16 KiB of workgroup memory.
	describe('16 KiB tiles', () => {
		const tuning = { workgroupBytes: PORTABLE_WORKGROUP_BYTES };
		itRunsCases(
			attentionCases([
				{ B: 2, T: 70, Hq: 6, Hkv: 2, D: 64, lengths: [70, 33], tuning },
				// the largest head size, GQA 7 after a cache
				{ B: 1, T: 20, Tk: 31, Hq: 7, Hkv: 1, D: MAX_HEAD_DIM, qOffset: 9, lengths: [27], tuning }
			]),
			gpu
		);
	});

	// The chunk depths the H200 (48 KiB) tiles use at D = 128 (score chunks of 32 head-dim
	// values, second-phase chunks of 32 / 32 / 16 rows), on grids that fit 32 KiB here.
	describe('48 KiB chunk shapes', () => {
		const tiles = {
			forward: { rt: 4, ct: 16, bk: 32, bv: 32 },
			dq: { rt: 4, ct: 16, bk: 16, bv: 32 },
			dkdv: { rt: 4, ct: 8, bk: 32, bv: 16 }
		};
		itRunsCases(
			attentionCases([{ B: 1, T: 50, Hq: 4, Hkv: 2, D: 128, lengths: [47], tuning: { tiles } }]),
			gpu
		);
	});

	// Fewer tile rows per invocation (vec2 and scalar probability tiles, row reductions).
	describe('2 and 1 rows per invocation', () => {
		const rows = (tr: 1 | 2, rt: number) => ({
			tiles: {
				forward: { rt, ct: 4, bk: 8, bv: 8, tr },
				dq: { rt, ct: 4, bk: 4, bv: 16, tr },
				dkdv: { rt, ct: 4, bk: 8, bv: 8, tr }
			}
		});
		itRunsCases(
			attentionCases([
				{
					B: 2,
					T: 29,
					Tk: 41,
					Hq: 6,
					Hkv: 2,
					D: 8,
					qOffset: 9,
					lengths: [41, 25],
					tuning: rows(2, 5)
				},
				{ B: 1, T: 23, Hq: 3, Hkv: 1, D: 12, lengths: [21], tuning: rows(1, 6) }
			]),
			gpu
		);
	});

	it('tile choice: 16 KiB always fits, larger budgets get larger tiles', () => {
		for (const D of [1, 3, 64, 128, MAX_HEAD_DIM])
			for (const stage of ['forward', 'dq', 'dkdv'] as const) {
				const small = chooseTiles(stage, D, PORTABLE_WORKGROUP_BYTES);
				expect(tileGeometry(stage, D, small).bytes).toBeLessThanOrEqual(PORTABLE_WORKGROUP_BYTES);
				const large = chooseTiles(stage, D, 49152);
				expect(tileGeometry(stage, D, large).bytes).toBeLessThanOrEqual(49152);
				expect(large.rt * large.ct).toBeGreaterThan(small.rt * small.ct);
			}
		expect(() => chooseTiles('forward', 64, 2048)).toThrow(OverLimitError);
	});

	it('reference gradients match finite differences of the reference forward', () => {
		const dims: AttentionDims = { B: 2, T: 6, Tk: 8, Hq: 4, Hkv: 2, D: 5 };
		const lengths = [8, 6];
		const options = { qOffset: 2, scale: 0.6 };
		const rng = new Rng(7);
		const qn = dims.B * dims.T * dims.Hq * dims.D;
		const kn = dims.B * dims.Tk * dims.Hkv * dims.D;
		const x = { q: rng.normals(qn), k: rng.normals(kn), v: rng.normals(kn) };
		const w = Array.from(rng.normals(qn)); // loss = sum(w * out)
		const f64 = (a: Float32Array) => Float64Array.from(a);
		const inputs = { q: f64(x.q), k: f64(x.k), v: f64(x.v) };
		const loss = () => {
			const { out } = attentionRef(inputs.q, inputs.k, inputs.v, lengths, dims, options);
			return out.reduce((s, o, i) => s + o * w[i], 0);
		};
		const grads = attentionBackwardRef(inputs.q, inputs.k, inputs.v, w, lengths, dims, options);
		const h = 1e-6;
		const probes: [keyof typeof inputs, Float64Array, number][] = [
			['q', grads.dq, 3 * dims.Hq * dims.D + 2 * dims.D + 1], // b0, t3, h2, d1
			['k', grads.dk, (1 * dims.Hkv + 1) * dims.D + 4], // b0, j1, g1, d4 (shared by h2, h3)
			['v', grads.dv, ((dims.Tk + 2) * dims.Hkv + 0) * dims.D + 3], // b1, j2, g0, d3
			['q', grads.dq, (dims.T + 5) * dims.Hq * dims.D] // b1, t5: position 7 >= 6, padding
		];
		for (const [name, grad, i] of probes) {
			const x0 = inputs[name][i];
			inputs[name][i] = x0 + h;
			const up = loss();
			inputs[name][i] = x0 - h;
			const down = loss();
			inputs[name][i] = x0;
			const fd = (up - down) / (2 * h);
			expect(Math.abs(grad[i] - fd), `${name}[${i}]: ${grad[i]} vs ${fd}`).toBeLessThan(
				1e-7 + 1e-6 * Math.abs(fd)
			);
		}
		expect(grads.dq[probes[3][2]]).toBe(0);
		expect(Math.abs(grads.dq[probes[0][2]])).toBeGreaterThan(1e-3);
	});

	describe('rejects bad input', () => {
		type Shapes = {
			q?: number[];
			k?: number[];
			v?: number[];
			lengths?: number[];
			qOffset?: number;
			dk?: number[];
		};
		async function attempt(s: Shapes, backward = false) {
			const g = gpu();
			const q = s.q ?? [2, 5, 4, 8];
			const k = s.k ?? [2, 5, 2, 8];
			const t: Tensor[] = [];
			const f32 = (shape: number[]) => (t.push(createTensor(g, shape, 'f32')), t.at(-1)!);
			const args = {
				q: f32(q),
				k: f32(k),
				v: f32(s.v ?? k),
				out: f32(q),
				lse: f32([q[0], q[2], q[1]]),
				lengths: (t.push(createTensor(g, s.lengths ?? [q[0]], 'u32')), t.at(-1)!),
				qOffset: s.qOffset
			};
			try {
				await run(g, (rec) => {
					if (!backward) attentionForward(rec, args);
					else
						attentionBackward(rec, {
							...args,
							dout: f32(q),
							dq: f32(q),
							dk: f32(s.dk ?? k),
							dv: f32(k)
						});
				});
			} finally {
				for (const x of t) x.release();
			}
		}
		it('query heads not a multiple of kv heads', async () => {
			await expect(attempt({ q: [2, 5, 3, 8] })).rejects.toThrow(ShapeMismatchError);
		});
		it('mismatched head size', async () => {
			await expect(attempt({ k: [2, 5, 2, 16] })).rejects.toThrow(ShapeMismatchError);
		});
		it('v unlike k', async () => {
			await expect(attempt({ v: [2, 5, 1, 8] })).rejects.toThrow(ShapeMismatchError);
		});
		it('lengths of the wrong size', async () => {
			await expect(attempt({ lengths: [3] })).rejects.toThrow(ShapeMismatchError);
		});
		it('too few keys for qOffset + T', async () => {
			await expect(attempt({ qOffset: 1 })).rejects.toThrow(ShapeMismatchError);
		});
		it('dk unlike k in backward', async () => {
			await expect(attempt({ dk: [2, 5, 4, 8] }, true)).rejects.toThrow(ShapeMismatchError);
		});
		it('head size over the limit', async () => {
			await expect(attempt({ q: [1, 2, 1, 512], k: [1, 2, 1, 512] })).rejects.toThrow(
				OverLimitError
			);
		});
	});
});
