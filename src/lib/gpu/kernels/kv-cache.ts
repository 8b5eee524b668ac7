/**
 * @file KV-cache wrappers (see kv-cache.wgsl.ts): `kvCacheAppend` writes one new key and
 * value row per sequence into the caches at that sequence's own position, and
 * `advancePositions` moves every position on by one. Layouts, row-major: new k, v
 * [B, Hkv, D] (or [B, 1, Hkv, D], as a T = 1 projection makes them); caches
 * [B, S, Hkv, D], S the cache's capacity per sequence; positions u32 [B].
 */
import { assertShape, OverLimitError } from '../errors';
import { Params, type Recorder } from '../kernel';
import type { Tensor } from '../tensor';
import { KV_ADVANCE, KV_APPEND, KV_WG } from './kv-cache.wgsl';

const APPEND = { name: 'kv-cache.append', code: KV_APPEND };
const ADVANCE = { name: 'kv-cache.advance', code: KV_ADVANCE };

export interface KvCacheAppendArgs {
	/** New keys [B, Hkv, D] or [B, 1, Hkv, D], f32. */
	k: Tensor;
	/** New values, k's shape. */
	v: Tensor;
	/** [B, S, Hkv, D], f32; slot positions[b] of row b is written. */
	kCache: Tensor;
	vCache: Tensor;
	/** u32 [B]: the slot of each sequence's new row; a slot >= S is skipped. */
	positions: Tensor;
}

/** kCache[b, positions[b]] = k[b]; vCache[b, positions[b]] = v[b]. */
export function kvCacheAppend(rec: Recorder, args: KvCacheAppendArgs): void {
	const { k, v, kCache, vCache, positions } = args;
	const cs = kCache.shape;
	assertShape(
		cs.length === 4 &&
			[kCache, vCache].every(
				(t) => t.dtype === 'f32' && t.shape.length === 4 && t.shape.every((d, i) => d === cs[i])
			),
		() =>
			`kv-cache append: caches must be f32 [B, S, Hkv, D] of one shape; got k ` +
			`${kCache.dtype} [${kCache.shape}], v ${vCache.dtype} [${vCache.shape}]`
	);
	const [B, S, Hkv, D] = cs;
	const W = Hkv * D;
	const rowsOk = (t: Tensor) =>
		t.dtype === 'f32' &&
		t.size === B * W &&
		t.shape[0] === B &&
		t.shape[t.shape.length - 1] === D &&
		t.shape[t.shape.length - 2] === Hkv;
	assertShape(
		rowsOk(k) && rowsOk(v),
		() =>
			`kv-cache append: new k and v must be f32 [${B}, ${Hkv}, ${D}] for caches [${cs}]; ` +
			`got k ${k.dtype} [${k.shape}], v ${v.dtype} [${v.shape}]`
	);
	assertShape(
		positions.dtype === 'u32' && positions.size === B,
		() =>
			`kv-cache append: positions must be u32 [${B}]; got ${positions.dtype} [${positions.shape}]`
	);
	if (B * S * W >= 2 ** 32)
		throw new OverLimitError(`kv-cache append: a [${cs}] cache exceeds a u32 index`);
	if (B * W === 0) return;
	rec.dispatch(
		APPEND,
		[k, v, positions, kCache, vCache],
		Math.ceil((B * W) / KV_WG),
		new Params().u32(B).u32(S).u32(W)
	);
}

/** positions[b] += 1 for every b (u32 [B]). */
export function advancePositions(rec: Recorder, args: { positions: Tensor }): void {
	const { positions } = args;
	assertShape(
		positions.dtype === 'u32',
		() => `kv-cache advance: positions must be u32; got ${positions.dtype} [${positions.shape}]`
	);
	if (positions.size === 0) return;
	rec.dispatch(
		ADVANCE,
		[positions],
		Math.ceil(positions.size / KV_WG),
		new Params().u32(positions.size)
	);
}
