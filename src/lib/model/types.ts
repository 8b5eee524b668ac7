/**
 * @file The model layer's shared vocabulary: a decoder-only transformer's configuration,
 * normalised from Hugging Face's config.json (transformers 4.x and 5.x spellings), and
 * the source of its weights. Parsing lives in config.ts; loading in loader files.
 */

export type Architecture = 'LlamaForCausalLM' | 'Qwen2ForCausalLM' | 'Qwen3ForCausalLM';
export const SUPPORTED_ARCHITECTURES: readonly Architecture[] = [
	'LlamaForCausalLM',
	'Qwen2ForCausalLM',
	'Qwen3ForCausalLM'
];

/** Rotary embedding settings; `invFreq` is computed from these by the model layer. */
export interface RopeConfig {
	theta: number;
	/** 'default' (plain), 'linear', 'dynamic' is refused; 'llama3' per Llama 3.1/3.2. */
	type: 'default' | 'linear' | 'llama3';
	factor?: number;
	lowFreqFactor?: number;
	highFreqFactor?: number;
	originalMaxPositionEmbeddings?: number;
}

export type WeightDType = 'float32' | 'float16' | 'bfloat16';

export interface ModelConfig {
	architecture: Architecture;
	vocabSize: number;
	hiddenSize: number;
	intermediateSize: number;
	numLayers: number;
	numHeads: number;
	numKvHeads: number;
	/** Per-head width; Qwen3 sets it explicitly (not always hidden / heads). */
	headDim: number;
	rmsNormEps: number;
	rope: RopeConfig;
	maxPositionEmbeddings: number;
	tieWordEmbeddings: boolean;
	/** q/k/v projections carry biases (Qwen2; Llama's `attention_bias`). */
	attentionBias: boolean;
	/** o_proj carries a bias (rare; Llama's `attention_bias` sets it too). */
	outputBias: boolean;
	/** Per-head RMSNorm on q and k before RoPE (Qwen3). */
	qkNorm: boolean;
	/** The dtype the checkpoint declares (`torch_dtype` in 4.x, `dtype` in 5.x). */
	dtype: WeightDType;
	bosTokenId?: number;
	/** From config.json and generation_config.json, merged, in order. */
	eosTokenIds: number[];
}

/** A tensor as stored in a checkpoint: its dtype, shape, and a reader for its values. */
export interface StoredTensorInfo {
	name: string;
	dtype: WeightDType;
	shape: number[];
}

/** Where a model's weights come from (safetensors files on disk, a URL, memory). */
export interface WeightSource {
	list(): StoredTensorInfo[];
	/** The tensor's values widened to f32, row-major. Throws a typed error if missing. */
	readF32(name: string): Promise<Float32Array>;
	/** The tensor's raw f16 bits when stored as f16 (kept as they are: weight-dtype.ts). */
	readF16Bits?(name: string): Promise<Uint16Array>;
	/** The tensor's raw bf16 bits when stored as bf16 (converted to f16 by table lookup,
	 * without widening the whole tensor to f32 first). */
	readBf16Bits?(name: string): Promise<Uint16Array>;
	/** Rows [rowStart, rowStart + rowCount) of a matrix as f32, read without the rest (for
	 * uploading a large embedding chunk by chunk). */
	readF32Rows?(name: string, rowStart: number, rowCount: number): Promise<Float32Array>;
}
