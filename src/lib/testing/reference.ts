/**
 * @file CPU reference of the whole model in f64: the forward of LlamaForCausalLM /
 * Qwen2ForCausalLM / Qwen3ForCausalLM (LoRA as PEFT applies it) over a right-padded batch,
 * from gpu/reference/'s kernels, each sequence on its own rows, and next-token logprobs.
 * Tests compare the GPU model with it and differentiate it numerically to check LoRA
 * gradients. RoPE angles are f32, as transformers forms them.
 */
import { attentionRef } from '../gpu/reference/attention';
import { logSoftmaxGatherRef, logitsRef } from '../gpu/reference/logsoftmax';
import { matmulRef } from '../gpu/reference/matmul';
import { rmsNormRef } from '../gpu/reference/rmsnorm';
import { ropeRef } from '../gpu/reference/rope';
import { swigluRef } from '../gpu/reference/swiglu';
import type { TokenBatch } from '../model/transformer/batch';
import { ropeInvFreq } from '../model/hf/config';
import { peftName } from '../model/transformer/lora';
import type { ModelConfig } from '../model/types';
import { projectionPath, projectionShape, type ProjectionName } from '../model/hf/weight-spec';

export interface ReferenceLora {
	/** alpha / r. */
	scale: number;
	/** A [r, in] and B [out, r] by PEFT name (lora.ts `peftName`); absent modules: none. */
	params: ReadonlyMap<string, ArrayLike<number>>;
}

type Weights = ReadonlyMap<string, ArrayLike<number>>;

/** x [n, in] -> x W^T (+ bias) (+ scale x A^T B^T) [n, out]. */
function linearRef(
	x: ArrayLike<number>,
	n: number,
	config: ModelConfig,
	weights: Weights,
	layer: number,
	name: ProjectionName,
	lora?: ReferenceLora
): Float64Array {
	const [out, inF] = projectionShape(config, name);
	const path = projectionPath(layer, name);
	const y = matmulRef({
		a: x,
		b: weights.get(`${path}.weight`)!,
		m: n,
		n: out,
		k: inF,
		transB: true
	});
	const bias = weights.get(`${path}.bias`);
	if (bias) for (let i = 0; i < y.length; i++) y[i] += bias[i % out];
	const a = lora?.params.get(peftName(layer, name, 'A'));
	const b = lora?.params.get(peftName(layer, name, 'B'));
	if (a && b && lora) {
		const r = a.length / inF;
		const xa = matmulRef({ a: x, b: a, m: n, n: r, k: inF, transB: true });
		const d = matmulRef({ a: xa, b, m: n, n: out, k: r, transB: true });
		for (let i = 0; i < y.length; i++) y[i] += lora.scale * d[i];
	}
	return y;
}

/** One sequence's hidden states after the final norm [n, C]. */
function sequenceHidden(
	config: ModelConfig,
	weights: Weights,
	ids: ArrayLike<number>,
	lora: ReferenceLora | undefined
): Float64Array {
	const { hiddenSize: C, numHeads: Hq, numKvHeads: Hkv, headDim: D, rmsNormEps: eps } = config;
	const n = ids.length;
	const embed = weights.get('model.embed_tokens.weight')!;
	let x = new Float64Array(n * C);
	for (let t = 0; t < n; t++) for (let c = 0; c < C; c++) x[t * C + c] = embed[ids[t] * C + c];
	const { invFreq, attentionScaling } = ropeInvFreq(config);
	const positions = Array.from({ length: n }, (_, t) => t);
	for (let i = 0; i < config.numLayers; i++) {
		const p = `model.layers.${i}`;
		const h1 = rmsNormRef(x, weights.get(`${p}.input_layernorm.weight`)!, C, eps).y;
		let q = linearRef(h1, n, config, weights, i, 'q_proj', lora);
		let k = linearRef(h1, n, config, weights, i, 'k_proj', lora);
		const v = linearRef(h1, n, config, weights, i, 'v_proj', lora);
		if (config.qkNorm) {
			q = rmsNormRef(q, weights.get(`${p}.self_attn.q_norm.weight`)!, D, eps).y;
			k = rmsNormRef(k, weights.get(`${p}.self_attn.k_norm.weight`)!, D, eps).y;
		}
		const shape = { batch: 1, seq: n, dim: D };
		q = ropeRef(q, positions, invFreq, { ...shape, heads: Hq }, attentionScaling);
		k = ropeRef(k, positions, invFreq, { ...shape, heads: Hkv }, attentionScaling);
		const att = attentionRef(q, k, v, [n], { B: 1, T: n, Tk: n, Hq, Hkv, D }).out;
		const o = linearRef(att, n, config, weights, i, 'o_proj', lora);
		const x2 = x.map((val, j) => val + o[j]);
		const h2 = rmsNormRef(x2, weights.get(`${p}.post_attention_layernorm.weight`)!, C, eps).y;
		const gate = linearRef(h2, n, config, weights, i, 'gate_proj', lora);
		const up = linearRef(h2, n, config, weights, i, 'up_proj', lora);
		const d = linearRef(swigluRef(gate, up), n, config, weights, i, 'down_proj', lora);
		x = x2.map((val, j) => val + d[j]);
	}
	return rmsNormRef(x, weights.get('model.norm.weight')!, C, eps).y;
}

/**
 * logprobs [B, T - 1]: log p(ids[b, t + 1] | ids[b, <= t]) at temperature `temperature`,
 * NaN past each sequence's end. `weights` by HF name (lm_head.weight absent when tied).
 */
export function referenceLogprobs(
	config: ModelConfig,
	weights: Weights,
	batch: TokenBatch,
	lora?: ReferenceLora,
	temperature = 1
): Float64Array {
	const { B, T } = batch;
	const { hiddenSize: C, vocabSize: V } = config;
	const head = weights.get(
		config.tieWordEmbeddings ? 'model.embed_tokens.weight' : 'lm_head.weight'
	)!;
	const out = new Float64Array(B * (T - 1)).fill(NaN);
	for (let b = 0; b < B; b++) {
		const n = batch.lengths[b];
		if (n < 2) continue;
		const ids = batch.ids.subarray(b * T, b * T + n);
		const h = sequenceHidden(config, weights, ids, lora).subarray(0, (n - 1) * C);
		const z = logitsRef(h, head, n - 1, C, V, temperature);
		const { logprobs } = logSoftmaxGatherRef(z, ids.subarray(1), V);
		for (let t = 0; t < n - 1; t++) out[b * (T - 1) + t] = logprobs[t];
	}
	return out;
}

/** sum over real targets of g[b, t] * logprobs[b, t]: the loss whose gradient
 * forwardBackward computes for dLogprobs = g. */
export function referenceLoss(
	config: ModelConfig,
	weights: Weights,
	batch: TokenBatch,
	g: ArrayLike<number>,
	lora?: ReferenceLora,
	temperature = 1
): number {
	const lp = referenceLogprobs(config, weights, batch, lora, temperature);
	let s = 0;
	for (let i = 0; i < lp.length; i++) if (!Number.isNaN(lp[i])) s += g[i] * lp[i];
	return s;
}

/** Logits [n, V] of every position of one sequence (temperature 1): row t scores the token
 * after ids[t]. Generation tests take the argmax and log-softmax of the last row. */
export function referenceLogits(
	config: ModelConfig,
	weights: Weights,
	ids: ArrayLike<number>,
	lora?: ReferenceLora
): Float64Array {
	const head = weights.get(
		config.tieWordEmbeddings ? 'model.embed_tokens.weight' : 'lm_head.weight'
	)!;
	const h = sequenceHidden(config, weights, ids, lora);
	return logitsRef(h, head, ids.length, config.hiddenSize, config.vocabSize);
}
