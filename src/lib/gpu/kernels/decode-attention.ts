/**
 * @file Decode attention (decode-attention.wgsl.ts): one query per sequence against its own
 * KV cache. q, out [B, Hq, D] (or [B, 1, Hq, D]); k, v caches [B, S, Hkv, D]; positions u32
 * [B]: sequence b attends keys 0..positions[b] (capped at S). With `sequences` (u32 [R]),
 * q has R rows of any sequences (several of one: a suffix over a cached prefix) and row r
 * reads cache row sequences[r]: a prefill's suffix rows one a workgroup (the Generator's
 * extendAttention 'rows'; its default, extend-attention.ts, takes a block of rows a
 * workgroup: faster on SwiftShader, slower on an H100 at 512 x 40 rows). Two dispatches
 * (split, combine) with the partial states in the recorder's scratch; one (the split pass
 * writing out) when a single split fills the GPU, as a batch of many sequences does.
 */
import { assertShape, OverLimitError } from '../errors';
import { Params, type KernelSource, type Recorder } from '../kernel';
import type { Tensor } from '../tensor';
import { DEFAULT_TUNING, tuningOf, type GpuTuning } from '../tuning';
import {
	DECODE_COMBINE,
	DECODE_MAX_HEAD_DIM,
	DECODE_WG,
	decodeGroupFits,
	decodeSplitWgsl
} from './decode-attention.wgsl';

export interface DecodeAttentionArgs {
	/** [B, Hq, D] or [B, 1, Hq, D], f32, after RoPE. */
	q: Tensor;
	/** The caches [B, S, Hkv, D], f32. */
	k: Tensor;
	v: Tensor;
	/** u32 [B] (or [R]): each query's position; keys 0..positions[b] are attended. */
	positions: Tensor;
	/** u32 [R]: the cache row (< B) each of q's R rows reads; absent: row b reads row b. */
	sequences?: Tensor;
	/** Written: q's shape. */
	out: Tensor;
	/** Multiplies q . k; default 1 / sqrt(D). */
	scale?: number;
	/** Key ranges reduced in parallel per (sequence, kv head); default from `decodeSplitPlan`. */
	splits?: number;
}

export interface DecodeSplitPlan {
	/** Key ranges per (sequence, kv head). */
	splits: number;
	/** Keys per range: whole tiles of DECODE_WG. */
	splitKeys: number;
}

/** How the S cache slots of B sequences over Hkv kv heads are split: enough workgroups to
 * fill the GPU (or `asked` splits), each split whole tiles of DECODE_WG keys, none empty.
 * "Enough" is tuning.targetWorkgroups (the gpu's, tuning.ts: 264 = two per SM on the H200,
 * as matmul's split-K; the default row when not given). */
export function decodeSplitPlan(
	B: number,
	Hkv: number,
	S: number,
	asked?: number,
	tuning: Pick<GpuTuning, 'targetWorkgroups'> = DEFAULT_TUNING
): DecodeSplitPlan {
	const tiles = Math.max(1, Math.ceil(S / DECODE_WG));
	const want = asked ?? Math.ceil(tuning.targetWorkgroups / Math.max(1, B * Hkv));
	const perSplit = Math.ceil(tiles / Math.max(1, Math.min(tiles, Math.floor(want))));
	return { splits: Math.ceil(tiles / perSplit), splitKeys: perSplit * DECODE_WG };
}

const splitKernels = new Map<string, KernelSource>();
function splitKernel(D: number, G: number, indexed: boolean, direct: boolean): KernelSource {
	const name = `decode-attention.split.d${D}.g${G}${indexed ? '.indexed' : ''}${direct ? '.direct' : ''}`;
	let k = splitKernels.get(name);
	if (!k) splitKernels.set(name, (k = { name, code: decodeSplitWgsl(D, G, indexed, direct) }));
	return k;
}
const COMBINE: KernelSource = { name: 'decode-attention.combine', code: DECODE_COMBINE };

/** What an attention over KV caches is given (decode attention, extend-attention.ts). */
export interface CacheAttentionArgs {
	q: Tensor;
	k: Tensor;
	v: Tensor;
	out: Tensor;
	scale?: number;
}

/**
 * The checks decode and extend attention share: k, v caches f32 [Bc, S, Hkv, D] of one
 * shape; q f32 [R, Hq, D] (or [R, 1, Hq, D]), Hq a multiple of Hkv, with R one row per
 * cache row or (`indexed`) any number; out f32 of q's size, not q; each of `rowTensors` u32
 * [R]; the cache within a u32 index; a finite scale (default 1 / sqrt(D)). Returns the dims.
 */
export function checkCacheAttention(
	what: string,
	args: CacheAttentionArgs,
	indexed: boolean,
	rowTensors: Record<string, Tensor>
) {
	const { q, k, v, out } = args;
	assertShape(
		k.shape.length === 4 &&
			k.dtype === 'f32' &&
			v.dtype === 'f32' &&
			v.shape.length === 4 &&
			v.shape.every((d, i) => d === k.shape[i]),
		() =>
			`${what}: k and v caches must be f32 [B, S, Hkv, D] of one shape; got k ${k.dtype} ` +
			`[${k.shape}], v ${v.dtype} [${v.shape}]`
	);
	const [Bc, S, Hkv, D] = k.shape;
	const qs = q.shape;
	const Hq = qs[qs.length - 2];
	// query rows: one per cache row, or any number with their cache rows named
	const R = indexed ? qs[0] : Bc;
	assertShape(
		q.dtype === 'f32' &&
			(qs.length === 3 || (qs.length === 4 && qs[1] === 1)) &&
			qs[0] === R &&
			qs[qs.length - 1] === D &&
			Hq > 0 &&
			Hq % Hkv === 0,
		() =>
			`${what}: q must be f32 [${R}, Hq, ${D}] (or [${R}, 1, Hq, ${D}]) with Hq a multiple of ` +
			`${Hkv} kv heads, for caches [${k.shape}]; got ${q.dtype} [${qs}]`
	);
	assertShape(
		out.dtype === 'f32' && out.size === q.size && out.buffer !== q.buffer,
		() => `${what}: out must be an f32 tensor of q's size [${qs}], not q; got [${out.shape}]`
	);
	for (const [name, t] of Object.entries(rowTensors))
		assertShape(
			t.dtype === 'u32' && t.size === R,
			() => `${what}: ${name} must be u32 [${R}]; got ${t.dtype} [${t.shape}]`
		);
	if (Bc * S * Hkv * D >= 2 ** 32)
		throw new OverLimitError(`${what}: a [${k.shape}] cache exceeds a u32 index`);
	const scale = args.scale ?? 1 / Math.sqrt(D);
	if (!Number.isFinite(scale)) throw new RangeError(`${what}: scale must be finite, got ${scale}`);
	return { R, S, Hkv, D, Hq, G: Hq / Hkv, scale };
}

/** out = softmax(scale q k^T over keys 0..positions[b]) v, per sequence and head. */
export function decodeAttention(rec: Recorder, args: DecodeAttentionArgs): void {
	const { q, k, v, positions, out, sequences } = args;
	const what = 'decode attention';
	const index: Record<string, Tensor> = sequences ? { sequences, positions } : { positions };
	const { R: B, S, Hkv, D, Hq, G, scale } = checkCacheAttention(what, args, !!sequences, index);
	if (D < 1 || D > DECODE_MAX_HEAD_DIM || !decodeGroupFits(D, G))
		throw new OverLimitError(
			`${what}: head size ${D} with ${G} query heads per kv head does not fit one ` +
				`workgroup (D <= ${DECODE_MAX_HEAD_DIM} and 4 G (D + ${DECODE_WG}) <= 16384 bytes)`
		);
	if (args.splits !== undefined && !(Number.isInteger(args.splits) && args.splits >= 1))
		throw new RangeError(`${what}: splits must be a positive integer, got ${args.splits}`);
	if (B === 0 || S === 0) return;
	const { splits, splitKeys } = decodeSplitPlan(B, Hkv, S, args.splits, tuningOf(rec.gpu));
	const rows = B * Hq;
	// one split (enough rows to fill the GPU): the pass writes out, no partial states to combine
	const direct = splits === 1;
	const parts = direct ? [] : [rec.scratch(rows * splits * D * 4), rec.scratch(rows * splits * 8)];
	rec.dispatch(
		splitKernel(D, G, sequences !== undefined, direct),
		[q, k, v, positions, ...(direct ? [out] : parts), ...(sequences ? [sequences] : [])],
		B * Hkv * splits,
		new Params().u32(B).u32(S).u32(Hkv).u32(splits).u32(splitKeys).f32(scale)
	);
	if (!direct)
		rec.dispatch(COMBINE, [...parts, out], rows, new Params().u32(rows).u32(splits).u32(D));
}
