/**
 * @file Causal grouped-query self-attention with right padding and a query offset (KV
 * cache), forward and backward: q, out [B, T, Hq, D], k, v [B, Tk, Hkv, D], lse [B, Hq, T],
 * lengths u32 [B] (kernels and mask rules: attention.wgsl.ts; plain math: reference/).
 * Checks shapes, picks tilings from the workgroup-memory limit (chooseTiles; *Tuned to
 * force one), records forward 1, backward 3 dispatches (rowstats, dq, dkdv).
 */
import { OverLimitError, assertShape } from '../errors';
import { Params, type KernelSource, type Recorder } from '../kernel';
import type { AttentionDims, AttentionOptions } from '../reference/attention';
import { checkBindable, type Tensor } from '../tensor';
import {
	MAX_HEAD_DIM,
	ROWSTATS_WORKGROUP,
	dkdvWgsl,
	dqWgsl,
	forwardWgsl,
	rowStatsWgsl,
	tileGeometry,
	type AttentionStage,
	type AttentionTiles
} from './attention.wgsl';

export interface AttentionForwardArgs {
	q: Tensor;
	k: Tensor;
	v: Tensor;
	/** Written: [B, T, Hq, D]. */
	out: Tensor;
	/** Written: the logsumexp of each query row's scores [B, Hq, T], kept for backward. */
	lse: Tensor;
	/** u32 [B]: keys and queries at positions >= lengths[b] are padding. */
	lengths: Tensor;
	/** Multiplies q . k; defaults to 1 / sqrt(D). */
	scale?: number;
	/** Position of query row 0: keys 0..qOffset-1 come from a cache. Default 0. */
	qOffset?: number;
}

export interface AttentionBackwardArgs extends Omit<AttentionForwardArgs, 'out' | 'lse'> {
	/** The forward's out and lse (read only here). */
	out: Tensor;
	lse: Tensor;
	dout: Tensor;
	/** Written: [B, T, Hq, D]. */
	dq: Tensor;
	/** Written: [B, Tk, Hkv, D], summed over the query heads of each kv head. */
	dk: Tensor;
	dv: Tensor;
}

interface Dims extends AttentionDims, Required<AttentionOptions> {}

/** Workgroup memory every WebGPU device grants (the default maxComputeWorkgroupStorageSize);
 * the last candidate of every stage fits in it. */
export const PORTABLE_WORKGROUP_BYTES = 16384;

/**
 * Invocation grids per stage, best first; the first whose tiles fit the device's
 * workgroup memory is used. Not yet measured on a GPU: chosen by reasoning.
 *  - forward, dq: 16 x 16 invocations, 64 query rows x 64 keys per tile, the FlashAttention-2
 *    forward block; 256 invocations (8 NVIDIA warps, 4 AMD waves) with 16 score
 *    accumulators each, and B * Hq * T / 64 workgroups (576 at SmolLM2's 8 x 512 x 9
 *    heads: about 4 per H200 SM). At D = 64 the forward needs ~40 KiB of workgroup memory
 *    with 32-deep chunks, within the 48 KiB Dawn grants on the H200; 32 KiB devices take
 *    16-deep chunks. 16 x 8 (64 x 32) is the 16 KiB fallback.
 *  - dkdv: 8 x 16 invocations, 32 keys x 64 query rows. The outputs dk, dv are small
 *    (summed over the query heads of a group), so each invocation holds 4 keys x D / 16
 *    of both (32 f32 at D = 64): halving the key tile from 64 doubles the workgroups
 *    (384 at SmolLM2's shape, 256 at Qwen2.5-0.5B's) for the same registers per invocation,
 *    and keeps the longest workgroup (key tile 0, every query of the group) half as long.
 *    4 x 16 (16 keys) is the 16 KiB fallback.
 */
const GRIDS: Record<AttentionStage, { rt: number; ct: number }[]> = {
	forward: [
		{ rt: 16, ct: 16 },
		{ rt: 16, ct: 8 },
		{ rt: 8, ct: 8 }
	],
	dq: [
		{ rt: 16, ct: 16 },
		{ rt: 16, ct: 8 },
		{ rt: 8, ct: 8 }
	],
	dkdv: [
		{ rt: 8, ct: 16 },
		{ rt: 4, ct: 16 },
		{ rt: 4, ct: 8 }
	]
};

/** Score-phase chunk depths (head-dim values), deepest first: each chunk costs two
 * barriers, so the deepest that fits; 32 halves the barriers of 16 at D = 64. */
const CHUNK_DEPTHS = [32, 16, 8, 4];

/** The tiling of `stage` for head size D within `budget` bytes of workgroup memory:
 * the first grid that fits, its deepest score chunk, then its longest second-phase chunk. */
export function chooseTiles(
	stage: AttentionStage,
	D: number,
	budget: number,
	maxThreads = 256
): AttentionTiles {
	for (const { rt, ct } of GRIDS[stage]) {
		if (rt * ct > maxThreads) continue;
		const cols = 4 * ct;
		const fits = (bk: number, bv: number) =>
			tileGeometry(stage, D, { rt, ct, bk, bv }).bytes <= budget;
		const bk = CHUNK_DEPTHS.find((depth) => fits(depth, 1));
		if (bk === undefined) continue;
		let bv = 1;
		while (bv * 2 <= cols && cols % (bv * 2) === 0 && fits(bk, bv * 2)) bv *= 2;
		return { rt, ct, bk, bv };
	}
	throw new OverLimitError(
		`attention ${stage}: no tiling for head size ${D} fits ${budget} bytes of workgroup memory`
	);
}

/** Overrides for tests and benchmarks; the model uses the defaults. */
export interface AttentionTuning {
	/** Workgroup memory the tilings may use; default: the device's limit. */
	workgroupBytes?: number;
	/** A fixed tiling per stage; default: chooseTiles. */
	tiles?: Partial<Record<AttentionStage, AttentionTiles>>;
}

const kernels = new Map<string, KernelSource>();

function cached(name: string, code: () => string): KernelSource {
	let source = kernels.get(name);
	if (!source) kernels.set(name, (source = { name, code: code() }));
	return source;
}

/** The pipeline of a tiled stage for head size D (D and the tiling are WGSL constants). */
function tiledKernel(
	rec: Recorder,
	stage: AttentionStage,
	D: number,
	tuning: AttentionTuning
): { source: KernelSource; tiles: AttentionTiles; rows: number } {
	const limits = rec.gpu.limits;
	const budget = tuning.workgroupBytes ?? limits.maxComputeWorkgroupStorageSize;
	const tiles =
		tuning.tiles?.[stage] ??
		chooseTiles(stage, D, budget, limits.maxComputeInvocationsPerWorkgroup);
	const geo = tileGeometry(stage, D, tiles);
	if (
		geo.bytes > limits.maxComputeWorkgroupStorageSize ||
		geo.threads > limits.maxComputeInvocationsPerWorkgroup
	)
		throw new OverLimitError(
			`attention ${stage}: tiles ${JSON.stringify(tiles)} need ${geo.bytes} bytes of workgroup ` +
				`memory and ${geo.threads} invocations; this device allows ` +
				`${limits.maxComputeWorkgroupStorageSize} and ${limits.maxComputeInvocationsPerWorkgroup}`
		);
	const { rt, ct, bk, bv } = tiles;
	const name = `attention.${stage}.d${D}.${rt}x${ct}.k${bk}.v${bv}${geo.tr === 4 ? '' : `.r${geo.tr}`}`;
	const generate = { forward: forwardWgsl, dq: dqWgsl, dkdv: dkdvWgsl }[stage];
	return { source: cached(name, () => generate(D, tiles)), tiles, rows: geo.rows };
}

const same = (a: Tensor, shape: readonly number[]) =>
	a.dtype === 'f32' && a.shape.length === shape.length && a.shape.every((d, i) => d === shape[i]);

/** Checks every operand against q's and k's shapes; returns the sizes. */
function dims(args: AttentionForwardArgs, what: string): Dims {
	const { q, k, v, out, lse, lengths } = args;
	assertShape(
		q.shape.length === 4 && k.shape.length === 4 && q.dtype === 'f32',
		() =>
			`${what}: q must be f32 [B, T, Hq, D] and k [B, Tk, Hkv, D]; got [${q.shape}], [${k.shape}]`
	);
	const [B, T, Hq, D] = q.shape;
	const [Bk, Tk, Hkv, Dk] = k.shape;
	const qOffset = args.qOffset ?? 0;
	assertShape(
		Bk === B && Dk === D && same(k, k.shape) && same(v, k.shape),
		() =>
			`${what}: k and v must be f32 [${B}, Tk, Hkv, ${D}] like q [${q.shape}]; ` +
			`got k [${k.shape}], v [${v.shape}]`
	);
	assertShape(
		Hkv > 0 && Hq % Hkv === 0,
		() => `${what}: query heads (${Hq}) must be a multiple of kv heads (${Hkv})`
	);
	assertShape(
		Number.isInteger(qOffset) && qOffset >= 0 && Tk >= qOffset + T,
		() => `${what}: keys (Tk = ${Tk}) must cover qOffset (${qOffset}) + T (${T})`
	);
	assertShape(
		same(out, q.shape) && same(lse, [B, Hq, T]),
		() =>
			`${what}: out must be f32 [${q.shape}] and lse f32 [${B}, ${Hq}, ${T}]; ` +
			`got out [${out.shape}] ${out.dtype}, lse [${lse.shape}] ${lse.dtype}`
	);
	assertShape(
		lengths.dtype === 'u32' && lengths.shape.length === 1 && lengths.shape[0] === B,
		() => `${what}: lengths must be u32 [${B}]; got ${lengths.dtype} [${lengths.shape}]`
	);
	if (D < 1 || D > MAX_HEAD_DIM) {
		throw new OverLimitError(
			`${what}: head size ${D} is outside 1..${MAX_HEAD_DIM}, the sizes these kernels ` +
				'keep per invocation. Use a model with a smaller head_dim.'
		);
	}
	return { B, T, Tk, Hq, Hkv, D, qOffset, scale: args.scale ?? 1 / Math.sqrt(D) };
}

function params(d: Dims): Params {
	return new Params().u32(d.B).u32(d.T).u32(d.Tk).u32(d.Hq).u32(d.Hkv).u32(d.qOffset).f32(d.scale);
}

const ceilDiv = (a: number, b: number) => Math.ceil(a / b);

/** out = softmax(scale q k^T, causal and padding masked) v; saves lse for the backward. */
export function attentionForward(rec: Recorder, args: AttentionForwardArgs): void {
	attentionForwardTuned(rec, args, {});
}

/** attentionForward with explicit tilings or a smaller workgroup-memory budget. */
export function attentionForwardTuned(
	rec: Recorder,
	args: AttentionForwardArgs,
	tuning: AttentionTuning
): void {
	const d = dims(args, 'attention');
	const { q, k, v, lengths, out, lse } = args;
	const { source, rows } = tiledKernel(rec, 'forward', d.D, tuning);
	rec.dispatch(source, [q, k, v, lengths, out, lse], d.B * d.Hq * ceilDiv(d.T, rows), params(d));
}

/** dq, dk, dv of sum(dout * out), recomputing probabilities from q, k and lse. */
export function attentionBackward(rec: Recorder, args: AttentionBackwardArgs): void {
	attentionBackwardTuned(rec, args, {});
}

/** attentionBackward with explicit tilings or a smaller workgroup-memory budget. */
export function attentionBackwardTuned(
	rec: Recorder,
	args: AttentionBackwardArgs,
	tuning: AttentionTuning
): void {
	const d = dims(args, 'attention backward');
	const { q, k, v, out, dout, lse, lengths, dq, dk, dv } = args;
	assertShape(
		same(dout, q.shape) && same(dq, q.shape) && same(dk, k.shape) && same(dv, k.shape),
		() =>
			`attention backward: dout and dq must be f32 [${q.shape}], dk and dv f32 [${k.shape}]; ` +
			`got dout [${dout.shape}], dq [${dq.shape}], dk [${dk.shape}], dv [${dv.shape}]`
	);
	const rows = d.B * d.Hq * d.T;
	const statsBytes = rows * 8; // (lse, D_i) as vec2<f32> per query row
	checkBindable(rec.gpu, statsBytes, 'attention backward row statistics');
	const dqKernel = tiledKernel(rec, 'dq', d.D, tuning);
	const dkdvKernel = tiledKernel(rec, 'dkdv', d.D, tuning);
	const stats = rec.scratch(statsBytes);
	const p = params(d);
	rec.dispatch(
		cached(`attention.rowstats.d${d.D}`, () => rowStatsWgsl(d.D)),
		[out, dout, lse, lengths, stats],
		ceilDiv(rows, ROWSTATS_WORKGROUP),
		p
	);
	rec.dispatch(
		dqKernel.source,
		[q, k, v, dout, stats, lengths, dq],
		d.B * d.Hq * ceilDiv(d.T, dqKernel.rows),
		p
	);
	rec.dispatch(
		dkdvKernel.source,
		[q, k, v, dout, stats, lengths, dk, dv],
		d.B * d.Hkv * ceilDiv(d.Tk, dkdvKernel.rows),
		p
	);
}
