/**
 * @file The tensors a checkpoint must hold for a config, by their Hugging Face names and
 * shapes (nn.Linear weights are [out, in]). Shared by the uploader (weights.ts), the
 * memory estimate (memory.ts) and the tiny random models of tests and fixtures.
 */
import type { ModelConfig } from '../types';

export interface WeightSpec {
	name: string;
	shape: number[];
}

/** The projections of one decoder layer, as transformers names its modules. */
export type ProjectionName =
	'q_proj' | 'k_proj' | 'v_proj' | 'o_proj' | 'gate_proj' | 'up_proj' | 'down_proj';

export const PROJECTIONS: readonly ProjectionName[] = [
	'q_proj',
	'k_proj',
	'v_proj',
	'o_proj',
	'gate_proj',
	'up_proj',
	'down_proj'
];

/** The module path of a projection inside layer `i`, e.g. 'model.layers.3.self_attn.q_proj'. */
export function projectionPath(layer: number, name: ProjectionName): string {
	const mlp = name === 'gate_proj' || name === 'up_proj' || name === 'down_proj';
	return `model.layers.${layer}.${mlp ? 'mlp' : 'self_attn'}.${name}`;
}

/** [out, in] of a projection. */
export function projectionShape(config: ModelConfig, name: ProjectionName): [number, number] {
	const { hiddenSize: c, intermediateSize: inter, numHeads, numKvHeads, headDim } = config;
	switch (name) {
		case 'q_proj':
			return [numHeads * headDim, c];
		case 'k_proj':
		case 'v_proj':
			return [numKvHeads * headDim, c];
		case 'o_proj':
			return [c, numHeads * headDim];
		case 'gate_proj':
		case 'up_proj':
			return [inter, c];
		case 'down_proj':
			return [c, inter];
	}
}

/** Every tensor the model reads, in load order (lm_head only when not tied). */
export function weightSpecs(config: ModelConfig): WeightSpec[] {
	const { hiddenSize: c, vocabSize: v, headDim } = config;
	const specs: WeightSpec[] = [{ name: 'model.embed_tokens.weight', shape: [v, c] }];
	for (let i = 0; i < config.numLayers; i++) {
		const p = `model.layers.${i}`;
		specs.push({ name: `${p}.input_layernorm.weight`, shape: [c] });
		for (const proj of PROJECTIONS) {
			const shape = projectionShape(config, proj);
			specs.push({ name: `${projectionPath(i, proj)}.weight`, shape });
			const biased =
				(config.attentionBias && (proj === 'q_proj' || proj === 'k_proj' || proj === 'v_proj')) ||
				(config.outputBias && proj === 'o_proj');
			if (biased) specs.push({ name: `${projectionPath(i, proj)}.bias`, shape: [shape[0]] });
			if (config.qkNorm && proj === 'k_proj') {
				specs.push({ name: `${p}.self_attn.q_norm.weight`, shape: [headDim] });
				specs.push({ name: `${p}.self_attn.k_norm.weight`, shape: [headDim] });
			}
		}
		specs.push({ name: `${p}.post_attention_layernorm.weight`, shape: [c] });
	}
	specs.push({ name: 'model.norm.weight', shape: [c] });
	if (!config.tieWordEmbeddings) specs.push({ name: 'lm_head.weight', shape: [v, c] });
	return specs;
}
