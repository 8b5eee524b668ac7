/**
 * @file One decoder layer (LlamaDecoderLayer, Qwen2's q/k/v biases, Qwen3's q_norm /
 * k_norm), forward and backward, with LoRA on the targeted projections. o_proj and down_proj
 * accumulate into the residual stream (beta = 1): no separate add. The backward takes
 * dLoss/dx3 in `bw.dS`, the layer's recomputed activations and its input, and leaves
 * dLoss/dx there (not for layer 0: `needDx` false); frozen weights get no gradient.
 * Rows that continue shared prefixes (shared-prefix.ts) attend over their prefix's keys and
 * values first; a prefix's own backward adds the key and value gradients its rows summed.
 */
import { addBias, addInPlace } from '../../gpu/kernels/add';
import { attentionBackward, attentionForward } from '../../gpu/kernels/attention';
import type { LoraAdapter } from '../../gpu/kernels/lora';
import { loraBackward, loraForward } from '../../gpu/kernels/lora';
import { matmul } from '../../gpu/kernels/matmul';
import { rmsNormBackward, rmsNormForward } from '../../gpu/kernels/rmsnorm';
import { ropeBackward, ropeForward } from '../../gpu/kernels/rope';
import { swigluBackward, swigluForward } from '../../gpu/kernels/swiglu';
import type { Recorder } from '../../gpu/kernel';
import type { Tensor } from '../../gpu/tensor';
import type { LoraParameters } from './lora';
import type { ModelConfig } from '../types';
import type { LayerWeights } from '../hf/weights';
import type { ProjectionName } from '../hf/weight-spec';
import type { Allocated } from './workspace';
import { backwardSpecs, layerSpecs } from './workspace';
import { assemblePrefixKv, splitPrefixKvGrad, type PrefixAttention } from './shared-prefix';

export type LayerActs = Allocated<ReturnType<typeof layerSpecs>>;
export type BackwardBuffers = Allocated<ReturnType<typeof backwardSpecs>>;
export type LoraActs = Partial<Record<ProjectionName, Tensor>>;

export interface LayerContext {
	config: ModelConfig;
	B: number;
	T: number;
	/** u32 [B]: tokens at t >= lengths[b] are right padding. */
	lengths: Tensor;
	/** u32 [T]: 0..T-1, shared by the batch (right padding). */
	positions: Tensor;
	/** f32 [D / 2]. */
	invFreq: Tensor;
	attentionScaling: number;
	/** The adapters, or undefined to run the base model. */
	lora?: LoraParameters;
	/** Per layer, the projections with the adapters merged in, W' = W + s B A (a Generator's
	 * copy, current): a targeted projection's y = x W'^T and dx = dy W', the adapter then
	 * adding only what its gradients need (x A^T; dy B). */
	merged?: readonly LayerWeights[];
	/** The rows continue shared prefixes (positions then start at prefix.p). */
	prefix?: PrefixAttention;
	/** This batch is the prefixes: their rows' summed key and value gradients [N, kvDim],
	 * added to the attention's own in the backward. */
	rowsKvGrad?: { dk: Tensor; dv: Tensor };
}

function adapterOf(ctx: LayerContext, layer: number, name: ProjectionName) {
	const m = ctx.lora?.get(layer, name);
	return m && ctx.lora ? { module: m, adapter: ctx.lora.adapter(m) } : undefined;
}

/** y (=|+=) x W^T (+ bias) (+ LoRA); x [N, in], W [out, in], y [N, out]. */
function linear(
	rec: Recorder,
	ctx: LayerContext,
	layer: number,
	name: ProjectionName,
	w: LayerWeights,
	x: Tensor,
	y: Tensor,
	xa: LoraActs,
	accumulate: boolean
): void {
	const lora = adapterOf(ctx, layer, name);
	const merged = lora && ctx.merged?.[layer].proj[name];
	matmul(rec, { a: x, b: merged ?? w.proj[name], c: y, transB: true, beta: accumulate ? 1 : 0 });
	const bias = w.bias[name];
	if (bias) addBias(rec, { bias, y });
	if (!lora) return;
	if (merged) matmul(rec, { a: x, b: lora.adapter.a, c: xa[name]!, transB: true });
	else loraForward(rec, { ...lora.adapter, x, y, xa: xa[name]! });
}

const headsView = (t: Tensor, ctx: LayerContext, heads: number, T = ctx.T) =>
	t.view([ctx.B, T, heads, ctx.config.headDim]);

/** Attention's keys, values, lengths and query offset: the layer's own, or with the rows'
 * prefixes before them ([B, p + T, Hkv, D]). */
function attentionKv(rec: Recorder, ctx: LayerContext, layer: number, k: Tensor, v: Tensor) {
	const pa = ctx.prefix;
	if (!pa) return { k, v, lengths: ctx.lengths };
	const full = assemblePrefixKv(rec, pa, layer, k, v);
	const Hkv = ctx.config.numKvHeads;
	return {
		k: headsView(full.k, ctx, Hkv, pa.p + ctx.T),
		v: headsView(full.v, ctx, Hkv, pa.p + ctx.T),
		lengths: pa.lengths,
		qOffset: pa.p
	};
}
const rowsView = (t: Tensor, ctx: LayerContext) =>
	t.view([t.size / ctx.config.headDim, ctx.config.headDim]);

export interface LayerForwardOptions {
	/** Stop once m (and down_proj's x A^T) is computed, s then holding x2: what the
	 * backward's recompute needs. */
	stopAfterMlpInput?: boolean;
	/** Copy x2 (the stream after attention) here, for a backward without recompute. */
	saveX2?: Tensor;
}

/** Layer `layer` forward on the residual stream `s` [N, C] in place (x in, x3 out). */
export function layerForward(
	rec: Recorder,
	ctx: LayerContext,
	layer: number,
	w: LayerWeights,
	s: Tensor,
	acts: LayerActs,
	xa: LoraActs,
	{ stopAfterMlpInput = false, saveX2 }: LayerForwardOptions = {}
): void {
	const { config } = ctx;
	const eps = config.rmsNormEps;
	const { numHeads: Hq, numKvHeads: Hkv } = config;
	rmsNormForward(rec, { x: s, weight: w.inputNorm, y: acts.h1, rstd: acts.rstd1, eps });
	const qLin = config.qkNorm ? acts.qPre! : acts.q;
	const kLin = config.qkNorm ? acts.kPre! : acts.k;
	linear(rec, ctx, layer, 'q_proj', w, acts.h1, qLin, xa, false);
	linear(rec, ctx, layer, 'k_proj', w, acts.h1, kLin, xa, false);
	linear(rec, ctx, layer, 'v_proj', w, acts.h1, acts.v, xa, false);
	if (config.qkNorm) {
		rmsNormForward(rec, {
			x: rowsView(qLin, ctx),
			weight: w.qNorm!,
			y: rowsView(acts.q, ctx),
			rstd: acts.rstdQ!,
			eps
		});
		rmsNormForward(rec, {
			x: rowsView(kLin, ctx),
			weight: w.kNorm!,
			y: rowsView(acts.k, ctx),
			rstd: acts.rstdK!,
			eps
		});
	}
	const rope = {
		positions: ctx.positions,
		invFreq: ctx.invFreq,
		attentionScaling: ctx.attentionScaling
	};
	const q = headsView(acts.q, ctx, Hq);
	const k = headsView(acts.k, ctx, Hkv);
	const v = headsView(acts.v, ctx, Hkv);
	ropeForward(rec, { x: q, ...rope });
	ropeForward(rec, { x: k, ...rope });
	const att = headsView(acts.att, ctx, Hq);
	attentionForward(rec, { q, out: att, lse: acts.lse, ...attentionKv(rec, ctx, layer, k, v) });
	linear(rec, ctx, layer, 'o_proj', w, acts.att, s, xa, true);
	if (saveX2) rec.copy(s.buffer, 0, saveX2.buffer, 0, s.byteLength);
	rmsNormForward(rec, { x: s, weight: w.postNorm, y: acts.h2, rstd: acts.rstd2, eps });
	linear(rec, ctx, layer, 'gate_proj', w, acts.h2, acts.gate, xa, false);
	linear(rec, ctx, layer, 'up_proj', w, acts.h2, acts.up, xa, false);
	swigluForward(rec, { gate: acts.gate, up: acts.up, h: acts.m });
	if (!stopAfterMlpInput) {
		linear(rec, ctx, layer, 'down_proj', w, acts.m, s, xa, true);
		return;
	}
	// The recompute skips down_proj's output, but its LoRA backward needs x A^T.
	const down = adapterOf(ctx, layer, 'down_proj');
	if (down) matmul(rec, { a: acts.m, b: down.adapter.a, c: xa.down_proj!, transB: true });
}

export interface LayerBackwardArgs {
	layer: number;
	w: LayerWeights;
	/** The layer's input x [N, C] (its checkpoint). */
	x: Tensor;
	/** The layer's activations (kept from the forward, or recomputed). */
	acts: LayerActs;
	/** The stream after attention, x2 [N, C]. */
	x2: Tensor;
	xa: LoraActs;
	bw: BackwardBuffers;
	/** Compute dLoss/dx into bw.dS (false for layer 0). */
	needDx: boolean;
	/** Add into the LoRA gradients instead of overwriting them. */
	accumulate: boolean;
}

/** dLoss/dx3 in bw.dS -> LoRA gradients, and dLoss/dx in bw.dS when needDx. */
export function layerBackward(rec: Recorder, ctx: LayerContext, args: LayerBackwardArgs): void {
	const { layer, w, x, x2, acts, xa, bw, needDx, accumulate } = args;
	const { config } = ctx;
	const { numHeads: Hq, numKvHeads: Hkv } = config;

	// Frozen path dx = dy W (+= when `add`), then LoRA's A/B gradients and its share of dx.
	const linearBackward = (
		name: ProjectionName,
		input: Tensor,
		dy: Tensor,
		dx: Tensor | undefined,
		add: boolean
	) => {
		const lora = adapterOf(ctx, layer, name);
		const merged = lora && ctx.merged?.[layer].proj[name];
		if (dx) matmul(rec, { a: dy, b: merged ?? w.proj[name], c: dx, beta: add ? 1 : 0 });
		if (!lora) return;
		const m = lora.module;
		const adapter: LoraAdapter = lora.adapter;
		loraBackward(rec, {
			...adapter,
			x: input,
			xa: xa[name]!,
			dy,
			dA: m.dA,
			dB: m.dB,
			dx: merged ? undefined : dx,
			accumulate
		});
	};

	// MLP: x3 = x2 + down(silu(gate(h2)) * up(h2)), h2 = rmsnorm(x2).
	linearBackward('down_proj', acts.m, bw.dS, bw.dm, false);
	swigluBackward(rec, {
		input: { gate: acts.gate, up: acts.up },
		dh: bw.dm,
		grads: { dgate: bw.dgate, dup: bw.dup }
	});
	linearBackward('gate_proj', acts.h2, bw.dgate, bw.dh, false);
	linearBackward('up_proj', acts.h2, bw.dup, bw.dh, true);
	rmsNormBackward(rec, { dy: bw.dh, x: x2, weight: w.postNorm, rstd: acts.rstd2, dx: bw.tmp });
	addInPlace(rec, { x: bw.tmp, y: bw.dS }); // dS = dLoss/dx2

	// Attention: x2 = x + o(attention(rope(q), rope(k), v)).
	linearBackward('o_proj', acts.att, bw.dS, bw.datt, false);
	const q = headsView(acts.q, ctx, Hq);
	const k = headsView(acts.k, ctx, Hkv);
	const v = headsView(acts.v, ctx, Hkv);
	const dq = headsView(bw.dq, ctx, Hq);
	const dk = headsView(bw.dk, ctx, Hkv);
	const pa = ctx.prefix;
	const S = (pa?.p ?? 0) + ctx.T;
	attentionBackward(rec, {
		q,
		...attentionKv(rec, ctx, layer, k, v),
		out: headsView(acts.att, ctx, Hq),
		lse: acts.lse,
		dout: headsView(bw.datt, ctx, Hq),
		dq,
		dk: pa ? headsView(pa.dk!, ctx, Hkv, S) : dk,
		dv: pa ? headsView(pa.dv!, ctx, Hkv, S) : headsView(bw.dv, ctx, Hkv)
	});
	if (pa) splitPrefixKvGrad(rec, pa, bw.dk, bw.dv);
	if (ctx.rowsKvGrad) {
		addInPlace(rec, { x: ctx.rowsKvGrad.dk, y: bw.dk });
		addInPlace(rec, { x: ctx.rowsKvGrad.dv, y: bw.dv });
	}
	const rope = {
		positions: ctx.positions,
		invFreq: ctx.invFreq,
		attentionScaling: ctx.attentionScaling
	};
	ropeBackward(rec, { x: dq, ...rope });
	ropeBackward(rec, { x: dk, ...rope });
	let dqLin = bw.dq;
	let dkLin = bw.dk;
	if (config.qkNorm) {
		rmsNormBackward(rec, {
			dy: rowsView(bw.dq, ctx),
			x: rowsView(acts.qPre!, ctx),
			weight: w.qNorm!,
			rstd: acts.rstdQ!,
			dx: rowsView(bw.dqPre!, ctx)
		});
		rmsNormBackward(rec, {
			dy: rowsView(bw.dk, ctx),
			x: rowsView(acts.kPre!, ctx),
			weight: w.kNorm!,
			rstd: acts.rstdK!,
			dx: rowsView(bw.dkPre!, ctx)
		});
		dqLin = bw.dqPre!;
		dkLin = bw.dkPre!;
	}
	const dh1 = needDx ? bw.dh : undefined;
	linearBackward('q_proj', acts.h1, dqLin, dh1, false);
	linearBackward('k_proj', acts.h1, dkLin, dh1, true);
	linearBackward('v_proj', acts.h1, bw.dv, dh1, true);
	if (!needDx) return;
	rmsNormBackward(rec, { dy: bw.dh, x, weight: w.inputNorm, rstd: acts.rstd1, dx: bw.tmp });
	addInPlace(rec, { x: bw.tmp, y: bw.dS }); // dS = dLoss/dx
}
