/**
 * @file KV-cache wrappers for decoding (see kv-cache.wgsl.ts): `ropeAppend` rotates the new
 * q and k (RoPE, as rope.ts) and writes the rotated key and the value of each sequence into
 * the caches at that sequence's own position, one dispatch; `advancePositions` moves every
 * position on by one. Layouts, row-major: new k, v [B, Hkv, D]
 * (or [B, 1, Hkv, D], as a T = 1 projection makes them); q [B, Hq, D] (or [B, 1, Hq, D]);
 * caches [B, S, Hkv, D], S the cache's capacity per sequence; positions u32 [B].
 */
import { assertShape, OverLimitError } from '../errors';
import { Params, type Recorder } from '../kernel';
import type { Tensor } from '../tensor';
import { KV_ADVANCE, KV_ROPE_APPEND, KV_WG } from './kv-cache.wgsl';
import { checkRotation } from './rope';

const ADVANCE = { name: 'kv-cache.advance', code: KV_ADVANCE };
const ROPE_APPEND = { name: 'kv-cache.rope-append', code: KV_ROPE_APPEND };

interface KvCacheAppendArgs {
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

/** The caches' [B, S, Hkv, D] after checking the arguments. */
function checkAppend(what: string, args: KvCacheAppendArgs) {
	const { k, v, kCache, vCache, positions } = args;
	const cs = kCache.shape;
	assertShape(
		cs.length === 4 &&
			[kCache, vCache].every(
				(t) => t.dtype === 'f32' && t.shape.length === 4 && t.shape.every((d, i) => d === cs[i])
			),
		() =>
			`${what}: caches must be f32 [B, S, Hkv, D] of one shape; got k ` +
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
			`${what}: new k and v must be f32 [${B}, ${Hkv}, ${D}] for caches [${cs}]; ` +
			`got k ${k.dtype} [${k.shape}], v ${v.dtype} [${v.shape}]`
	);
	assertShape(
		positions.dtype === 'u32' && positions.size === B,
		() => `${what}: positions must be u32 [${B}]; got ${positions.dtype} [${positions.shape}]`
	);
	if (B * S * W >= 2 ** 32)
		throw new OverLimitError(`${what}: a [${cs}] cache exceeds a u32 index`);
	return { B, S, Hkv, D, W };
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

export interface RopeAppendArgs extends KvCacheAppendArgs {
	/** The new queries [B, Hq, D] or [B, 1, Hq, D], f32: rotated in place. */
	q: Tensor;
	/** f32 [D / 2] (rope.ts uploadRopeInvFreq). */
	invFreq: Tensor;
	/** Multiplies cos and sin (transformers' attention_scaling); default 1. */
	attentionScaling?: number;
}

/** RoPE at positions[b] on q (in place) and on k, then kCache[b, positions[b]] = the rotated
 * k[b] and vCache[b, positions[b]] = v[b] (k itself is left as it was). */
export function ropeAppend(rec: Recorder, args: RopeAppendArgs): void {
	const { q, k, v, kCache, vCache, positions, invFreq, attentionScaling = 1 } = args;
	const what = 'rope append';
	const { B, S, Hkv, D } = checkAppend(what, args);
	const Hq = q.size / Math.max(1, B * D);
	assertShape(
		q.dtype === 'f32' &&
			q.shape[0] === B &&
			q.shape[q.shape.length - 1] === D &&
			Number.isInteger(Hq) &&
			q.shape[q.shape.length - 2] === Hq,
		() => `${what}: q must be f32 [${B}, Hq, ${D}]; got ${q.dtype} [${q.shape}]`
	);
	checkRotation(what, D, invFreq, attentionScaling);
	const pairs = (B * (Hq + Hkv) * D) / 2;
	if (pairs >= 2 ** 32 - KV_WG)
		throw new OverLimitError(`${what}: ${pairs} pairs exceed a u32 index`);
	if (pairs === 0) return;
	rec.dispatch(
		ROPE_APPEND,
		[q, k, v, positions, invFreq, kCache, vCache],
		Math.ceil(pairs / KV_WG),
		new Params()
			.u32(B)
			.u32(S)
			.u32(Hq)
			.u32(Hkv)
			.u32(D / 2)
			.f32(attentionScaling)
	);
}
