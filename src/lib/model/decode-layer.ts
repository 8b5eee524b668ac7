/**
 * @file One decoder layer's forward for a decode step: one new token per sequence
 * (x [B, C]), each at its own position, attending to its own KV cache. The same math as
 * layer.ts's layerForward (Llama; Qwen2's q/k/v biases; Qwen3's q_norm / k_norm; LoRA on
 * the targeted projections), with attention replaced by: append the new k, v to the cache
 * at positions[b], then decode attention over slots 0..positions[b].
 *
 *   h1 = rmsnorm(x); q, k, v = h1 W^T (+ b) (+ LoRA); [Qwen3: rmsnorm_D(q), rmsnorm_D(k)]
 *   q, k = rope(q, k at positions[b]); cache[b, positions[b]] = k, v
 *   x += attention(q, cache) Wo^T; h2 = rmsnorm(x); x += (silu(h2 Wg^T) * h2 Wu^T) Wd^T
 *
 * Nothing here is kept for a backward: LoRA's x A^T goes to one shared [B, r] buffer.
 */
import { addBias } from '../gpu/kernels/add';
import { decodeAttention } from '../gpu/kernels/decode-attention';
import { kvCacheAppend } from '../gpu/kernels/kv-cache';
import { loraForward } from '../gpu/kernels/lora';
import { matmul } from '../gpu/kernels/matmul';
import { rmsNormForward } from '../gpu/kernels/rmsnorm';
import { ropeForward } from '../gpu/kernels/rope';
import { swigluForward } from '../gpu/kernels/swiglu';
import type { Recorder } from '../gpu/kernel';
import type { Tensor } from '../gpu/tensor';
import type { LoraParameters } from './lora';
import type { ModelConfig } from './types';
import type { LayerWeights } from './weights';
import type { ProjectionName } from './weight-spec';
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
		/** LoRA's x A^T, shared by the projections in turn. */
		xa: loraRank > 0 ? f32(B, loraRank) : undefined
	};
}

export type DecodeActs = {
	[K in keyof ReturnType<typeof decodeActSpecs>]: ReturnType<
		typeof decodeActSpecs
	>[K] extends TensorSpec
		? Tensor
		: Tensor | undefined;
};

/** y (=|+=) x W^T (+ bias) (+ LoRA). */
function linear(
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
	if (m && ctx.lora) loraForward(rec, { ...ctx.lora.adapter(m), x, y, xa: xa! });
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
	rmsNormForward(rec, { x, weight: w.inputNorm, y: acts.h1, rstd: acts.rstd, eps });
	const qLin = config.qkNorm ? acts.qPre! : acts.q;
	const kLin = config.qkNorm ? acts.kPre! : acts.k;
	linear(rec, ctx, layer, 'q_proj', w, acts.h1, qLin, xa, false);
	linear(rec, ctx, layer, 'k_proj', w, acts.h1, kLin, xa, false);
	linear(rec, ctx, layer, 'v_proj', w, acts.h1, acts.v, xa, false);
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
	ropeForward(rec, { x: q, ...rope });
	ropeForward(rec, { x: k, ...rope });
	kvCacheAppend(rec, { k, v, kCache: cache.k, vCache: cache.v, positions: ctx.positions });
	const att = acts.att.view([B, 1, Hq, D]);
	decodeAttention(rec, { q, k: cache.k, v: cache.v, positions: ctx.positions, out: att });
	linear(rec, ctx, layer, 'o_proj', w, acts.att, x, xa, true);
	rmsNormForward(rec, { x, weight: w.postNorm, y: acts.h2, rstd: acts.rstd, eps });
	linear(rec, ctx, layer, 'gate_proj', w, acts.h2, acts.gate, xa, false);
	linear(rec, ctx, layer, 'up_proj', w, acts.h2, acts.up, xa, false);
	swigluForward(rec, { gate: acts.gate, up: acts.up, h: acts.m });
	linear(rec, ctx, layer, 'down_proj', w, acts.m, x, xa, true);
}
