/**
 * @file A decode step's RoPE + KV-cache append (one kernel) and the position advance,
 * checked against their CPU references. Tolerance: the caches' values and the advanced
 * positions exact (atol 0, rtol 0: only moved or counted); the rotated q and k 1e-6
 * absolute + 1e-5 relative, as RoPE's own (its sin/cos within ~1.1e-7 of f64).
 */
import type { Gpu } from '../device';
import { run } from '../kernel';
import { advancePositions, ropeAppend } from '../kernels/kv-cache';
import { ropeInvFreq, uploadRopeInvFreq } from '../kernels/rope';
import { advancePositionsRef, kvCacheAppendRef } from '../reference/kv-cache';
import { ropeRef } from '../reference/rope';
import { Rng } from '../../util/random';
import { readTensor, uploadTensor, type Tensor } from '../tensor';
import type { Comparison, KernelCase } from './types';

const EXACT = { atol: 0, rtol: 0 };
const ROTATED = { atol: 1e-6, rtol: 1e-5 };

export interface KvCacheCaseSpec {
	B: number;
	S: number;
	/** Query heads (a multiple of Hkv) and kv heads, of head size D. */
	Hq: number;
	Hkv: number;
	D: number;
	/** One slot per sequence; slots >= S must leave the cache untouched. */
	positions: number[];
	/** New rows as [B, 1, H, D] (a T = 1 projection's shape) instead of [B, H, D]. */
	withT?: boolean;
}

export function kvCacheCases(specs: KvCacheCaseSpec[]): KernelCase[] {
	return specs.map((spec) => ({
		family: 'kv-cache',
		name:
			`rope append + advance B=${spec.B} S=${spec.S} Hq=${spec.Hq} Hkv=${spec.Hkv} ` +
			`D=${spec.D} positions=[${spec.positions}]`,
		run: (gpu: Gpu) => runCase(gpu, spec)
	}));
}

async function runCase(gpu: Gpu, spec: KvCacheCaseSpec): Promise<Comparison[]> {
	const { B, S, Hq, Hkv, D, positions } = spec;
	const W = Hkv * D;
	const rng = new Rng(B * 31 + S * 7 + W + Hq);
	const cacheK = rng.normals(B * S * W);
	const cacheV = rng.normals(B * S * W);
	const newQ = rng.normals(B * Hq * D);
	const newK = rng.normals(B * W);
	const newV = rng.normals(B * W);
	const theta = 10000;
	const owned: Tensor[] = [];
	const keep = <T extends Tensor>(t: T) => (owned.push(t), t);
	try {
		const rows = (H: number) => (spec.withT ? [B, 1, H, D] : [B, H, D]);
		const kCache = keep(uploadTensor(gpu, cacheK, [B, S, Hkv, D], 'f32'));
		const vCache = keep(uploadTensor(gpu, cacheV, [B, S, Hkv, D], 'f32'));
		const q = keep(uploadTensor(gpu, newQ, rows(Hq), 'f32'));
		const k = keep(uploadTensor(gpu, newK, rows(Hkv), 'f32'));
		const v = keep(uploadTensor(gpu, newV, rows(Hkv), 'f32'));
		const pos = keep(uploadTensor(gpu, positions, [B], 'u32'));
		const invFreq = keep(uploadRopeInvFreq(gpu, theta, D));
		await run(gpu, (rec) => {
			ropeAppend(rec, { q, k, v, kCache, vCache, positions: pos, invFreq });
			advancePositions(rec, { positions: pos });
		});
		const dims = { B, S, W };
		const rotate = (x: Float32Array, heads: number) =>
			ropeRef(x, positions, ropeInvFreq(theta, D), { batch: B, seq: 1, heads, dim: D });
		return [
			{ label: 'q', actual: await readTensor(q), expected: rotate(newQ, Hq), ...ROTATED },
			{
				label: 'k cache',
				actual: await readTensor(kCache),
				expected: kvCacheAppendRef(cacheK, rotate(newK, Hkv), positions, dims),
				...ROTATED
			},
			{
				label: 'v cache',
				actual: await readTensor(vCache),
				expected: kvCacheAppendRef(cacheV, newV, positions, dims),
				...EXACT
			},
			{
				label: 'positions',
				actual: await readTensor(pos),
				expected: advancePositionsRef(positions),
				...EXACT
			}
		];
	} finally {
		for (const t of owned) t.release();
	}
}

/** The self-test's sizes: Qwen2.5-0.5B's heads (14 over 2 kv heads of 64), one slot past
 * the cache. */
export const KV_CACHE_SELFTEST = kvCacheCases([
	{ B: 3, S: 9, Hq: 14, Hkv: 2, D: 64, positions: [0, 8, 9] }
]);
