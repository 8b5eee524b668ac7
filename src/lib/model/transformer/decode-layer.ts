/**
 * @file One decoder layer's forward for a decode step: one new token per sequence (x [B,
 * C]) at its own position, appending k, v to its cache and attending over slots
 * 0..positions[b]; layer.ts's math otherwise, nothing kept for a backward. Matmuls per
 * session: 'fused' (default, B <= 32: skinny kernels with q/k/v, gate/up + SwiGLU, LoRA's
 * A and the RMSNorms fused; 6 to 8 dispatches), 'skinny' (one per projection), 'tiled'.
 * With `extend`, the B rows are prompt suffixes over cached prefixes (generate/extend.ts):
 * several rows of a sequence, each written to its cache slot and attending 0..its position.
 */
import { addBias } from '../../gpu/kernels/add';
import { copyRowSpans, type RowSpans } from '../../gpu/kernels/copy';
import { decodeAttention } from '../../gpu/kernels/decode-attention';
import { extendAttention } from '../../gpu/kernels/extend-attention';
import { ropeAppend } from '../../gpu/kernels/kv-cache';
import { loraForward } from '../../gpu/kernels/lora';
import { matmul } from '../../gpu/kernels/matmul';
import { skinnyMatmul, type SkinnySegment, type SkinnyTiling } from '../../gpu/kernels/skinny';
import { rmsNormForward } from '../../gpu/kernels/rmsnorm';
import { ropeForward } from '../../gpu/kernels/rope';
import { swigluForward } from '../../gpu/kernels/swiglu';
import type { Recorder } from '../../gpu/kernel';
import { Tensor } from '../../gpu/tensor';
import type { LoraParameters } from './lora';
import type { ModelConfig } from '../types';
import type { LayerWeights } from '../hf/weights';
import type { ProjectionName } from '../hf/weight-spec';
import type { TensorSpec } from './workspace';

export interface DecodeContext {
	config: ModelConfig;
	/** Sequences in the batch. */
	B: number;
	/** u32 [B]: the position of each sequence's new token (its cache slot). */
	positions: Tensor;
	/** f32 [D / 2]. */
	invFreq: Tensor;
	attentionScaling: number;
	/** The adapters, or undefined for the base model. */
	lora?: LoraParameters;
	/** Which matmul kernels; default DEFAULT_DECODE_MATMUL. */
	matmul?: DecodeMatmulOptions;
	/** Rows that are not one per sequence: `sequences` u32 [B] names each row's cache row,
	 * `kvSpans` moves the rows' k, v [B, Hkv * D] to their slots (cache rows [Bc * S]),
	 * `blocks` u32 [nb, 2] groups each sequence's consecutive rows (extendBlocks); `rows`:
	 * each row attends alone (decode attention's indexed form) instead of in blocks. */
	extend?: { sequences: Tensor; kvSpans: RowSpans; blocks: Tensor; rows?: boolean };
}

/** How a decode step does its weight products (benchmarks compare these). */
export interface DecodeMatmulOptions {
	/** 'fused' (default): skinny kernels, projections sharing an input in one dispatch;
	 * 'skinny': one skinny dispatch per projection; 'tiled': the general matmul. */
	mode: 'fused' | 'skinny' | 'tiled';
	/** Rows (sequences) up to which the skinny kernels are used; more take the tiled path. */
	maxSkinnyRows: number;
	/** Override the skinny kernel's chosen tiling (every call of the step). */
	tiling?: Partial<SkinnyTiling>;
}

export const DEFAULT_DECODE_MATMUL: DecodeMatmulOptions = { mode: 'fused', maxSkinnyRows: 32 };

/** Parses 'fused' | 'skinny' | 'tiled', optionally with tiling, e.g.
 * 'skinny:lanes=16,cols=2,rows=8,groups=4,subgroup=0,maxRows=64' (bench flags). */
export function parseDecodeMatmul(spec: string): DecodeMatmulOptions {
	const [mode, rest = ''] = spec.split(':');
	if (mode !== 'fused' && mode !== 'skinny' && mode !== 'tiled')
		throw new RangeError(`decode matmul '${spec}': the mode must be fused, skinny or tiled`);
	const out: DecodeMatmulOptions = { ...DEFAULT_DECODE_MATMUL, mode };
	const tiling: Partial<SkinnyTiling> = {};
	for (const kv of rest.split(',').filter(Boolean)) {
		const [k, v] = kv.split('=');
		const n = Number(v);
		if (!Number.isInteger(n) || n < 0)
			throw new RangeError(`decode matmul '${spec}': ${k} needs a non-negative integer`);
		if (k === 'maxRows') out.maxSkinnyRows = n;
		else if (['rows', 'cols', 'lanes', 'groups', 'subgroup'].includes(k))
			tiling[k as keyof SkinnyTiling] = n;
		else
			throw new RangeError(
				`decode matmul '${spec}': unknown key ${k} (rows, cols, lanes, groups, subgroup, maxRows)`
			);
	}
	if (Object.keys(tiling).length) out.tiling = tiling;
	return out;
}

/** The mode a step of B rows runs with these options. */
export function decodeMatmulMode(o: DecodeMatmulOptions | undefined, B: number) {
	const opts = o ?? DEFAULT_DECODE_MATMUL;
	return B <= opts.maxSkinnyRows ? opts.mode : 'tiled';
}

const f32 = (...shape: number[]): TensorSpec => ({ shape, dtype: 'f32' });

/** One decode step's per-layer activations (reused by every layer), B tokens. */
export function decodeActSpecs(config: ModelConfig, B: number, loraRank = 0) {
	const qDim = config.numHeads * config.headDim;
	const kvDim = config.numKvHeads * config.headDim;
	const qk = config.qkNorm;
	return {
		h1: f32(B, config.hiddenSize),
		rstd: f32(B),
		q: f32(B, qDim),
		k: f32(B, kvDim),
		v: f32(B, kvDim),
		/** Qwen3: the projections' outputs before q_norm / k_norm. */
		qPre: qk ? f32(B, qDim) : undefined,
		kPre: qk ? f32(B, kvDim) : undefined,
		rstdQ: qk ? f32(B * config.numHeads) : undefined,
		rstdK: qk ? f32(B * config.numKvHeads) : undefined,
		att: f32(B, qDim),
		h2: f32(B, config.hiddenSize),
		gate: f32(B, config.intermediateSize),
		up: f32(B, config.intermediateSize),
		m: f32(B, config.intermediateSize),
		/** LoRA's x A^T, shared by the projections in turn (q, k, v side by side). */
		xa: loraRank > 0 ? f32(B, 3 * loraRank) : undefined
	};
}

export type DecodeActs = {
	[K in keyof ReturnType<typeof decodeActSpecs>]: ReturnType<
		typeof decodeActSpecs
	>[K] extends TensorSpec
		? Tensor
		: Tensor | undefined;
};

/** y (=|+=) x W^T (+ bias) (+ LoRA) with the general kernels. */
function linearTiled(
	rec: Recorder,
	ctx: DecodeContext,
	layer: number,
	name: ProjectionName,
	w: LayerWeights,
	x: Tensor,
	y: Tensor,
	xa: Tensor | undefined,
	accumulate: boolean
): void {
	matmul(rec, { a: x, b: w.proj[name], c: y, transB: true, beta: accumulate ? 1 : 0 });
	const bias = w.bias[name];
	if (bias) addBias(rec, { bias, y });
	const m = ctx.lora?.get(layer, name);
	if (m && ctx.lora) {
		// xa holds 3r columns per row; this product uses a [B, r] prefix of it.
		const r = m.a.shape[0];
		const xaR = new Tensor(rec.gpu, xa!.buffer, [ctx.B, r], 'f32', { giveBack: () => {} });
		loraForward(rec, { ...ctx.lora.adapter(m), x, y, xa: xaR });
	}
}

/** One product of a skinny call: the projection's weight, bias and output. */
interface Projection {
	name: ProjectionName;
	y?: Tensor;
}

/**
 * The projections `ps` of input x with skinny kernels: first every LoRA A (x A^T into xa,
 * side by side), then the weights with bias and LoRA's up projection in the epilogue.
 * `fused`: each of those a single call (its dispatches split only by binding limits);
 * else one call per projection. `swiglu`: ps are gate and up, out = silu(gate) * up.
 */
function linearSkinny(
	rec: Recorder,
	ctx: DecodeContext,
	layer: number,
	w: LayerWeights,
	x: Tensor,
	ps: Projection[],
	xa: Tensor | undefined,
	o: { accumulate?: boolean; swiglu?: Tensor; fused: boolean; norm?: Tensor }
): void {
	const tiling = ctx.matmul?.tiling;
	const norm = o.norm && { weight: o.norm, eps: ctx.config.rmsNormEps };
	const lora = ctx.lora;
	const segments: SkinnySegment[] = [];
	const loraA: SkinnySegment[] = [];
	let offset = 0;
	for (const p of ps) {
		const seg: SkinnySegment = { w: w.proj[p.name], bias: w.bias[p.name], y: p.y };
		const m = lora?.get(layer, p.name);
		if (m && lora && xa) {
			const r = m.a.shape[0];
			loraA.push({ w: m.a, y: xa, yOffset: offset });
			seg.lora = { xa, offset, b: m.b, scale: lora.scale };
			offset += r;
		}
		segments.push(seg);
	}
	const beta = o.accumulate ? 1 : 0;
	if (o.fused || o.swiglu) {
		if (loraA.length) skinnyMatmul(rec, { x, segments: loraA, norm, tiling });
		skinnyMatmul(rec, { x, segments, beta, swiglu: o.swiglu, norm, tiling });
		return;
	}
	let a = 0;
	for (const seg of segments) {
		if (seg.lora) skinnyMatmul(rec, { x, segments: [loraA[a++]], norm, tiling });
		skinnyMatmul(rec, { x, segments: [seg], beta, norm, tiling });
	}
}

/** Layer `layer` on the residual stream x [B, C] in place; writes the layer's cache. */
export function decodeLayerForward(
	rec: Recorder,
	ctx: DecodeContext,
	layer: number,
	w: LayerWeights,
	x: Tensor,
	acts: DecodeActs,
	cache: { k: Tensor; v: Tensor }
): void {
	const { config, B } = ctx;
	const { numHeads: Hq, numKvHeads: Hkv, headDim: D } = config;
	const eps = config.rmsNormEps;
	const xa = acts.xa;
	const mode = decodeMatmulMode(ctx.matmul, B);
	const fused = mode === 'fused';
	/** The projections `ps` of input x (accumulating into their outputs when asked). */
	const project = (x0: Tensor, ps: Projection[], accumulate = false) => {
		if (mode === 'tiled')
			for (const p of ps) linearTiled(rec, ctx, layer, p.name, w, x0, p.y!, xa, accumulate);
		else linearSkinny(rec, ctx, layer, w, x0, ps, xa, { accumulate, fused });
	};
	const qLin = config.qkNorm ? acts.qPre! : acts.q;
	const kLin = config.qkNorm ? acts.kPre! : acts.k;
	const qkv: Projection[] = [
		{ name: 'q_proj', y: qLin },
		{ name: 'k_proj', y: kLin },
		{ name: 'v_proj', y: acts.v }
	];
	// Fused: the input norm happens inside the q/k/v (and LoRA A) products.
	if (fused) linearSkinny(rec, ctx, layer, w, x, qkv, xa, { fused, norm: w.inputNorm });
	else {
		rmsNormForward(rec, { x, weight: w.inputNorm, y: acts.h1, rstd: acts.rstd, eps });
		project(acts.h1, qkv);
	}
	if (config.qkNorm) {
		const rows = (t: Tensor) => t.view([t.size / D, D]);
		rmsNormForward(rec, {
			x: rows(qLin),
			weight: w.qNorm!,
			y: rows(acts.q),
			rstd: acts.rstdQ!,
			eps
		});
		rmsNormForward(rec, {
			x: rows(kLin),
			weight: w.kNorm!,
			y: rows(acts.k),
			rstd: acts.rstdK!,
			eps
		});
	}
	// [B, 1, H, D]: one token per sequence, positions [B] one per token.
	const q = acts.q.view([B, 1, Hq, D]);
	const k = acts.k.view([B, 1, Hkv, D]);
	const v = acts.v.view([B, 1, Hkv, D]);
	const rope = {
		positions: ctx.positions,
		invFreq: ctx.invFreq,
		attentionScaling: ctx.attentionScaling
	};
	const extend = ctx.extend;
	if (extend) {
		ropeForward(rec, { x: q, ...rope });
		ropeForward(rec, { x: k, ...rope });
		const width = Hkv * D;
		copyRowSpans(rec, { src: acts.k, dst: cache.k, width, spans: extend.kvSpans });
		copyRowSpans(rec, { src: acts.v, dst: cache.v, width, spans: extend.kvSpans });
	} else ropeAppend(rec, { q, k, v, kCache: cache.k, vCache: cache.v, ...rope }); // k stays unrotated
	const att = acts.att.view([B, 1, Hq, D]);
	if (extend && !extend.rows)
		extendAttention(rec, {
			q,
			k: cache.k,
			v: cache.v,
			positions: ctx.positions,
			sequences: extend.sequences,
			blocks: extend.blocks,
			out: att
		});
	else
		decodeAttention(rec, {
			q,
			k: cache.k,
			v: cache.v,
			positions: ctx.positions,
			...(extend ? { sequences: extend.sequences } : {}),
			out: att
		});
	project(acts.att, [{ name: 'o_proj', y: x }], true);
	const gateUp: Projection[] = [
		{ name: 'gate_proj', y: acts.gate },
		{ name: 'up_proj', y: acts.up }
	];
	if (fused)
		linearSkinny(rec, ctx, layer, w, x, gateUp, xa, { swiglu: acts.m, fused, norm: w.postNorm });
	else {
		rmsNormForward(rec, { x, weight: w.postNorm, y: acts.h2, rstd: acts.rstd, eps });
		project(acts.h2, gateUp);
		swigluForward(rec, { gate: acts.gate, up: acts.up, h: acts.m });
	}
	project(acts.m, [{ name: 'down_proj', y: x }], true);
}
