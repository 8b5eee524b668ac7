/**
 * @file The Hugging Face instruct models the page offers by name: each one's Hub id and its
 * config.json / generation_config.json as published (written inline, so the page can size a
 * run before anything downloads), and what a download weighs. Any other Hub model of a
 * supported architecture is loaded by its URL instead; these are the ones known to load,
 * fit a tab and follow the environments' prompts.
 */
import { parseModelConfig } from './config';
import { weightSpecs } from './weight-spec';
import type { ModelConfig } from '../types';
import { withoutTrailingSlash } from '../../util/location';

export interface HubModel {
	/** Short name in links and the CLI ('smollm2-135m'). */
	key: string;
	/** The Hub repo id. */
	id: string;
	/** Parameters in words, as the model card says. */
	params: string;
	config: Record<string, unknown>;
	generationConfig: Record<string, unknown>;
}

// HuggingFaceTB/SmolLM2-{135M,360M}-Instruct share all but their sizes (transformers 4.42.3).
const SMOLLM2_COMMON = {
	architectures: ['LlamaForCausalLM'],
	attention_bias: false,
	attention_dropout: 0.0,
	bos_token_id: 1,
	eos_token_id: 2,
	hidden_act: 'silu',
	is_llama_config: true,
	max_position_embeddings: 8192,
	mlp_bias: false,
	model_type: 'llama',
	pad_token_id: 2,
	pretraining_tp: 1,
	rms_norm_eps: 1e-5,
	rope_interleaved: false,
	rope_scaling: null,
	rope_theta: 100000,
	tie_word_embeddings: true,
	torch_dtype: 'bfloat16',
	transformers_version: '4.42.3',
	use_cache: true,
	vocab_size: 49152
};
const SMOLLM2_GENERATION = { bos_token_id: 1, eos_token_id: 2, pad_token_id: 2 };

// Qwen/Qwen2.5-0.5B-Instruct and Qwen/Qwen3-0.6B share their tokenizer's ids.
const QWEN_GENERATION = {
	bos_token_id: 151643,
	pad_token_id: 151643,
	do_sample: true,
	eos_token_id: [151645, 151643]
};

export const HUB_MODELS: readonly HubModel[] = [
	{
		key: 'smollm2-135m',
		id: 'HuggingFaceTB/SmolLM2-135M-Instruct',
		params: '135M',
		config: {
			...SMOLLM2_COMMON,
			hidden_size: 576,
			initializer_range: 0.041666666666666664,
			intermediate_size: 1536,
			num_attention_heads: 9,
			num_hidden_layers: 30,
			num_key_value_heads: 3
		},
		generationConfig: SMOLLM2_GENERATION
	},
	{
		key: 'smollm2-360m',
		id: 'HuggingFaceTB/SmolLM2-360M-Instruct',
		params: '360M',
		config: {
			...SMOLLM2_COMMON,
			hidden_size: 960,
			initializer_range: 0.02,
			intermediate_size: 2560,
			num_attention_heads: 15,
			num_hidden_layers: 32,
			num_key_value_heads: 5
		},
		generationConfig: SMOLLM2_GENERATION
	},
	{
		key: 'qwen2.5-0.5b',
		id: 'Qwen/Qwen2.5-0.5B-Instruct',
		params: '0.5B',
		// (transformers 4.43.1)
		config: {
			architectures: ['Qwen2ForCausalLM'],
			attention_dropout: 0.0,
			bos_token_id: 151643,
			eos_token_id: 151645,
			hidden_act: 'silu',
			hidden_size: 896,
			initializer_range: 0.02,
			intermediate_size: 4864,
			max_position_embeddings: 32768,
			max_window_layers: 21,
			model_type: 'qwen2',
			num_attention_heads: 14,
			num_hidden_layers: 24,
			num_key_value_heads: 2,
			rms_norm_eps: 1e-6,
			rope_theta: 1000000.0,
			sliding_window: 32768,
			tie_word_embeddings: true,
			torch_dtype: 'bfloat16',
			transformers_version: '4.43.1',
			use_cache: true,
			use_sliding_window: false,
			vocab_size: 151936
		},
		generationConfig: {
			...QWEN_GENERATION,
			repetition_penalty: 1.1,
			temperature: 0.7,
			top_p: 0.8,
			top_k: 20,
			transformers_version: '4.37.0'
		}
	},
	{
		key: 'qwen3-0.6b',
		id: 'Qwen/Qwen3-0.6B',
		params: '0.6B',
		// (transformers 4.51.0)
		config: {
			architectures: ['Qwen3ForCausalLM'],
			attention_bias: false,
			attention_dropout: 0.0,
			bos_token_id: 151643,
			eos_token_id: 151645,
			head_dim: 128,
			hidden_act: 'silu',
			hidden_size: 1024,
			initializer_range: 0.02,
			intermediate_size: 3072,
			max_position_embeddings: 40960,
			max_window_layers: 28,
			model_type: 'qwen3',
			num_attention_heads: 16,
			num_hidden_layers: 28,
			num_key_value_heads: 8,
			rms_norm_eps: 1e-6,
			rope_scaling: null,
			rope_theta: 1000000,
			sliding_window: null,
			tie_word_embeddings: true,
			torch_dtype: 'bfloat16',
			transformers_version: '4.51.0',
			use_cache: true,
			use_sliding_window: false,
			vocab_size: 151936
		},
		generationConfig: {
			...QWEN_GENERATION,
			temperature: 0.6,
			top_k: 20,
			top_p: 0.95,
			transformers_version: '4.51.0'
		}
	}
];

/** The catalog entry of a key ('qwen3-0.6b'), or undefined. */
export const hubModel = (key: string): HubModel | undefined =>
	HUB_MODELS.find((m) => m.key === key);

/** Where the Hub serves a repo's files (CORS open, redirects to its CDN). */
export const hubUrl = (id: string): string => `https://huggingface.co/${id}/resolve/main/`;

/** The entry whose repo a location names (a resolve URL of it), or undefined. */
export function hubModelAt(location: string): HubModel | undefined {
	const s = withoutTrailingSlash(location.trim()) + '/';
	return HUB_MODELS.find((m) => s === hubUrl(m.id) || s === `https://huggingface.co/${m.id}/`);
}

/** The parsed config of an entry. */
export const hubModelConfig = (m: HubModel): ModelConfig =>
	parseModelConfig(m.config, m.generationConfig);

/** Parameters and the bytes a download of the weights weighs, in the dtype published. */
export function downloadSize(config: ModelConfig): { parameters: number; bytes: number } {
	const parameters = weightSpecs(config).reduce(
		(n, s) => n + s.shape.reduce((a, b) => a * b, 1),
		0
	);
	const bytesPer = config.dtype === 'float32' ? 4 : 2;
	return { parameters, bytes: parameters * bytesPer };
}
