/**
 * @file Tiny random models in exact Hugging Face layout for tests (and
 * tools/make-fixtures.ts): llama (4.x config, F32, tied, llama3 RoPE), llama-untied-bf16
 * (5.x, BF16, linear RoPE, attention_bias), qwen2 (F16, q/k/v biases, one kv head), qwen3
 * (q/k norm, head_dim != C / H, two shards). Built in memory, deterministic from the seed;
 * the stored values come back too, for a CPU reference. Never committed as files.
 */
import { parseModelConfig } from '../model/hf/config';
import {
	encodeSafetensors,
	roundToDType,
	type WritableDType
} from '../model/hf/safetensors-writer';
import type { ModelConfig } from '../model/types';
import { weightSpecs } from '../model/hf/weight-spec';
import { tinyTokenizer, type TinyTokenizer } from './tiny-tokenizer';

export type FixtureName = 'llama' | 'llama-untied-bf16' | 'qwen2' | 'qwen3';
export const FIXTURE_NAMES: readonly FixtureName[] = [
	'llama',
	'llama-untied-bf16',
	'qwen2',
	'qwen3'
];

export interface FixtureOptions {
	/** Seeds every weight (default 1). */
	seed?: number;
	/** Decoder layers (default 2). */
	numLayers?: number;
	/**
	 * Other tokenizer files (e.g. the real Qwen3 ones, ids = its <|endoftext|> etc.); vocab_size
	 * becomes `size` rounded up to 64. The files are used as given (template and all).
	 */
	tokenizer?: Pick<TinyTokenizer, 'tokenizerJson' | 'tokenizerConfigJson' | 'size' | 'ids'>;
}

export interface Fixture {
	name: FixtureName;
	/** File name -> contents, exactly as a model repo holds them. */
	files: Map<string, Uint8Array | string>;
	/** config.json as written (raw transformers spelling). */
	rawConfig: Record<string, unknown>;
	/** The config as parseModelConfig reads it (with generation_config.json). */
	config: ModelConfig;
	/** Tensor name -> values as stored (rounded to the file dtype), row-major f32. */
	tensors: Map<string, Float32Array>;
	/** Tensor names per safetensors file. */
	shards: Map<string, string[]>;
}

interface Variant {
	raw: Record<string, unknown>;
	fileDtype: WritableDType;
	/** transformers 5.x layout: chat_template.jinja beside the tokenizer files. */
	jinja: boolean;
	sharded: boolean;
}

function roundUp(n: number, to: number): number {
	return Math.ceil(n / to) * to;
}

function variant(
	name: FixtureName,
	numLayers: number,
	vocab: number,
	tok: Pick<TinyTokenizer, 'ids'>
): Variant {
	const { endoftext, imEnd } = tok.ids;
	const common = {
		hidden_act: 'silu',
		num_hidden_layers: numLayers,
		vocab_size: vocab,
		initializer_range: 0.02,
		use_cache: true
	};
	switch (name) {
		case 'llama':
			// SmolLM2 / Llama 3.2 shape of file: 4.x spelling, llama3 rope scaling. With head
			// dim 8 and theta 1e4 the wavelengths are 6.3, 63, 628, 6283: original 1024,
			// low 1, high 4 puts one in each band (kept, blended, divided by factor).
			return {
				raw: {
					architectures: ['LlamaForCausalLM'],
					model_type: 'llama',
					...common,
					hidden_size: 32,
					intermediate_size: 64,
					num_attention_heads: 4,
					num_key_value_heads: 2,
					max_position_embeddings: 8192,
					rms_norm_eps: 1e-5,
					rope_theta: 10000.0,
					rope_scaling: {
						factor: 8.0,
						high_freq_factor: 4.0,
						low_freq_factor: 1.0,
						original_max_position_embeddings: 1024,
						rope_type: 'llama3'
					},
					attention_bias: false,
					attention_dropout: 0.0,
					mlp_bias: false,
					pretraining_tp: 1,
					tie_word_embeddings: true,
					bos_token_id: endoftext,
					eos_token_id: imEnd,
					torch_dtype: 'float32',
					transformers_version: '4.46.0'
				},
				fileDtype: 'F32',
				jinja: false,
				sharded: false
			};
		case 'llama-untied-bf16':
			// 5.x spelling: rope_parameters, dtype, chat_template.jinja; untied head; biases on
			// all four attention projections; GQA 3.
			return {
				raw: {
					architectures: ['LlamaForCausalLM'],
					model_type: 'llama',
					...common,
					hidden_size: 48,
					intermediate_size: 96,
					num_attention_heads: 6,
					num_key_value_heads: 2,
					head_dim: 8,
					max_position_embeddings: 4096,
					rms_norm_eps: 1e-6,
					rope_parameters: { rope_theta: 500000.0, rope_type: 'linear', factor: 2.0 },
					attention_bias: true,
					attention_dropout: 0.0,
					mlp_bias: false,
					pretraining_tp: 1,
					tie_word_embeddings: false,
					bos_token_id: endoftext,
					eos_token_id: [imEnd, endoftext],
					dtype: 'bfloat16',
					transformers_version: '5.0.0'
				},
				fileDtype: 'BF16',
				jinja: true,
				sharded: false
			};
		case 'qwen2':
			// Qwen2.5 shape of file: q/k/v biases, one kv head (GQA 4), theta 1e6, f16.
			return {
				raw: {
					architectures: ['Qwen2ForCausalLM'],
					model_type: 'qwen2',
					...common,
					hidden_size: 32,
					intermediate_size: 48,
					num_attention_heads: 4,
					num_key_value_heads: 1,
					max_position_embeddings: 32768,
					max_window_layers: numLayers,
					rms_norm_eps: 1e-6,
					rope_theta: 1000000.0,
					sliding_window: 32768,
					use_sliding_window: false,
					attention_dropout: 0.0,
					tie_word_embeddings: true,
					bos_token_id: endoftext,
					eos_token_id: imEnd,
					torch_dtype: 'float16',
					transformers_version: '4.43.1'
				},
				fileDtype: 'F16',
				jinja: false,
				sharded: false
			};
		case 'qwen3':
			// Qwen3-0.6B shape of file: explicit head_dim 16 != 32 / 4, q/k norms, two shards.
			return {
				raw: {
					architectures: ['Qwen3ForCausalLM'],
					model_type: 'qwen3',
					...common,
					hidden_size: 32,
					intermediate_size: 64,
					num_attention_heads: 4,
					num_key_value_heads: 2,
					head_dim: 16,
					max_position_embeddings: 40960,
					max_window_layers: numLayers,
					rms_norm_eps: 1e-6,
					rope_scaling: null,
					rope_theta: 1000000,
					sliding_window: null,
					use_sliding_window: false,
					attention_bias: false,
					attention_dropout: 0.0,
					tie_word_embeddings: true,
					bos_token_id: endoftext,
					eos_token_id: imEnd,
					torch_dtype: 'float32',
					transformers_version: '4.51.0'
				},
				fileDtype: 'F32',
				jinja: false,
				sharded: true
			};
	}
}

/** mulberry32: a small, fast, seedable 32-bit generator. */
function mulberry32(seed: number): () => number {
	let a = seed >>> 0;
	return () => {
		a = (a + 0x6d2b79f5) >>> 0;
		let t = a;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
}

/** FNV-1a of the name: each tensor its own stream, independent of the others' order. */
function hashName(name: string, seed: number): number {
	let h = 0x811c9dc5 ^ seed;
	for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193);
	return h >>> 0;
}

function gaussian(n: number, mean: number, std: number, rand: () => number): Float32Array {
	const out = new Float32Array(n);
	for (let i = 0; i < n; i++) {
		const u = 1 - rand();
		const v = rand();
		out[i] = mean + std * Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
	}
	return out;
}

/** Random values for a tensor by its role: norms near 1, biases small, weights ~ 1/sqrt(in). */
function randomTensor(name: string, shape: number[], seed: number): Float32Array {
	const rand = mulberry32(hashName(name, seed));
	const n = shape.reduce((a, b) => a * b, 1);
	if (name.endsWith('norm.weight')) return gaussian(n, 1, 0.1, rand);
	if (name.endsWith('.bias')) return gaussian(n, 0, 0.1, rand);
	if (name === 'model.embed_tokens.weight') return gaussian(n, 0, 0.5, rand);
	return gaussian(n, 0, 1 / Math.sqrt(shape[1]), rand);
}

/** Builds one fixture model in memory; see the file comment for the variants. */
export function makeFixture(name: FixtureName, options: FixtureOptions = {}): Fixture {
	const seed = options.seed ?? 1;
	const numLayers = options.numLayers ?? 2;
	const tiny = tinyTokenizer(true);
	const tok = options.tokenizer ?? tiny;
	const v = variant(name, numLayers, roundUp(tok.size, 64), tok);
	const generationConfig = {
		bos_token_id: v.raw.bos_token_id,
		eos_token_id: [tok.ids.imEnd, tok.ids.endoftext],
		pad_token_id: tok.ids.endoftext,
		do_sample: true,
		temperature: 0.7,
		top_p: 0.8,
		transformers_version: v.raw.transformers_version
	};
	const config = parseModelConfig(v.raw, generationConfig);
	const tokenizerConfig = JSON.parse(tok.tokenizerConfigJson) as Record<string, unknown>;
	if (v.jinja && !options.tokenizer) delete tokenizerConfig.chat_template;

	const tensors = new Map<string, Float32Array>();
	const specs = weightSpecs(config);
	for (const spec of specs)
		tensors.set(
			spec.name,
			roundToDType(randomTensor(spec.name, spec.shape, hashName(name, seed)), v.fileDtype)
		);

	// Shards: embedding + the first half of the layers, then the rest.
	const shards = new Map<string, string[]>();
	if (v.sharded) {
		const firstOfSecond = specs.findIndex((s) =>
			s.name.startsWith(`model.layers.${Math.ceil(numLayers / 2)}.`)
		);
		const cut = firstOfSecond < 0 ? Math.ceil(specs.length / 2) : firstOfSecond;
		shards.set(
			'model-00001-of-00002.safetensors',
			specs.slice(0, cut).map((s) => s.name)
		);
		shards.set(
			'model-00002-of-00002.safetensors',
			specs.slice(cut).map((s) => s.name)
		);
	} else
		shards.set(
			'model.safetensors',
			specs.map((s) => s.name)
		);

	const shapes = new Map(specs.map((s) => [s.name, s.shape]));
	const files = new Map<string, Uint8Array | string>();
	files.set('config.json', JSON.stringify(v.raw, null, 2) + '\n');
	files.set('generation_config.json', JSON.stringify(generationConfig, null, 2) + '\n');
	files.set('tokenizer.json', tok.tokenizerJson);
	files.set('tokenizer_config.json', JSON.stringify(tokenizerConfig, null, 2));
	if (v.jinja && !options.tokenizer) files.set('chat_template.jinja', tiny.chatTemplate);
	const bytesPer = v.fileDtype === 'F32' ? 4 : 2;
	const weightMap: Record<string, string> = {};
	let totalSize = 0;
	for (const [file, names] of shards) {
		files.set(
			file,
			encodeSafetensors(
				names.map((n) => ({
					name: n,
					dtype: v.fileDtype,
					shape: shapes.get(n)!,
					data: tensors.get(n)!
				})),
				{ format: 'pt' }
			)
		);
		for (const n of names) {
			weightMap[n] = file;
			totalSize += tensors.get(n)!.length * bytesPer;
		}
	}
	if (v.sharded)
		files.set(
			'model.safetensors.index.json',
			JSON.stringify({ metadata: { total_size: totalSize }, weight_map: weightMap }, null, 2)
		);
	return { name, files, rawConfig: v.raw, config, tensors, shards };
}
