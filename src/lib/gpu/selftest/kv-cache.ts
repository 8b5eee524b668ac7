/**
 * @file KV-cache append and position advance checked against their CPU reference.
 * Tolerance: exact (atol 0, rtol 0): both kernels only move or count values.
 */
import type { Gpu } from '../device';
import { run } from '../kernel';
import { advancePositions, kvCacheAppend } from '../kernels/kv-cache';
import { advancePositionsRef, kvCacheAppendRef } from '../reference/kv-cache';
import { Rng } from '../../util/random';
import { readTensor, uploadTensor, type Tensor } from '../tensor';
import type { Comparison, KernelCase } from './types';

const EXACT = { atol: 0, rtol: 0 };

export interface KvCacheCaseSpec {
	B: number;
	S: number;
	Hkv: number;
	D: number;
	/** One slot per sequence; slots >= S must leave the cache untouched. */
	positions: number[];
	/** New rows as [B, 1, Hkv, D] (a T = 1 projection's shape) instead of [B, Hkv, D]. */
	withT?: boolean;
}

export function kvCacheCases(specs: KvCacheCaseSpec[]): KernelCase[] {
	return specs.map((spec) => ({
		family: 'kv-cache',
		name:
			`append + advance B=${spec.B} S=${spec.S} Hkv=${spec.Hkv} D=${spec.D} ` +
			`positions=[${spec.positions}]`,
		run: (gpu: Gpu) => runCase(gpu, spec)
	}));
}

async function runCase(gpu: Gpu, spec: KvCacheCaseSpec): Promise<Comparison[]> {
	const { B, S, Hkv, D, positions } = spec;
	const W = Hkv * D;
	const rng = new Rng(B * 31 + S * 7 + W);
	const cacheK = rng.normals(B * S * W);
	const cacheV = rng.normals(B * S * W);
	const newK = rng.normals(B * W);
	const newV = rng.normals(B * W);
	const owned: Tensor[] = [];
	const keep = <T extends Tensor>(t: T) => (owned.push(t), t);
	try {
		const rowShape = spec.withT ? [B, 1, Hkv, D] : [B, Hkv, D];
		const kCache = keep(uploadTensor(gpu, cacheK, [B, S, Hkv, D], 'f32'));
		const vCache = keep(uploadTensor(gpu, cacheV, [B, S, Hkv, D], 'f32'));
		const k = keep(uploadTensor(gpu, newK, rowShape, 'f32'));
		const v = keep(uploadTensor(gpu, newV, rowShape, 'f32'));
		const pos = keep(uploadTensor(gpu, positions, [B], 'u32'));
		await run(gpu, (rec) => {
			kvCacheAppend(rec, { k, v, kCache, vCache, positions: pos });
			advancePositions(rec, { positions: pos });
		});
		const dims = { B, S, W };
		return [
			{
				label: 'k cache',
				actual: await readTensor(kCache),
				expected: kvCacheAppendRef(cacheK, newK, positions, dims),
				...EXACT
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

/** The self-test's sizes: Qwen2.5-0.5B's kv rows (2 x 64), one slot past the cache. */
export const KV_CACHE_SELFTEST = kvCacheCases([
	{ B: 3, S: 9, Hkv: 2, D: 64, positions: [0, 8, 9] }
]);
