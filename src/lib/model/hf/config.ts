/**
 * @file Hugging Face config.json (+ generation_config.json) -> the normalised ModelConfig
 * and its rotary frequencies. Both transformers 4.x and 5.x spellings load; absent optional
 * fields get transformers' defaults per architecture, sizes are required. Whatever the
 * forward would compute differently (another activation, sliding windows, other RoPE types,
 * MLP biases) is refused with a typed error, never approximated.
 */
import { ropeInvFreq as defaultInvFreq } from '../../gpu/kernels/rope';
import {
	InvalidConfigError,
	MissingConfigFieldError,
	UnsupportedArchitectureError,
	UnsupportedConfigError
} from '../errors';
import {
	SUPPORTED_ARCHITECTURES,
	type Architecture,
	type ModelConfig,
	type RopeConfig,
	type WeightDType
} from '../types';

type Json = Record<string, unknown>;

/** model_type -> architecture, for configs that omit "architectures". */
const MODEL_TYPES: Record<string, Architecture> = {
	llama: 'LlamaForCausalLM',
	qwen2: 'Qwen2ForCausalLM',
	qwen3: 'Qwen3ForCausalLM'
};

/** transformers' defaults where the architectures differ. */
const DEFAULT_MAX_POSITIONS: Record<Architecture, number> = {
	LlamaForCausalLM: 2048,
	Qwen2ForCausalLM: 32768,
	Qwen3ForCausalLM: 32768
};
/** Qwen3Config declares head_dim = 128 by default (not hidden / heads, unlike Llama/Qwen2). */
const QWEN3_DEFAULT_HEAD_DIM = 128;
/** Default rope_theta of all three config classes. */
const DEFAULT_ROPE_THETA = 10000;
/** Default rms_norm_eps of all three config classes. */
const DEFAULT_RMS_NORM_EPS = 1e-6;

const DTYPES: Record<string, WeightDType> = {
	float32: 'float32',
	float16: 'float16',
	bfloat16: 'bfloat16'
};

function asObject(json: string | Json, file: string): Json {
	if (typeof json !== 'string') return json;
	let parsed: unknown;
	try {
		parsed = JSON.parse(json);
	} catch (error) {
		throw new InvalidConfigError('(whole file)', `is not valid JSON: ${String(error)}`, file);
	}
	if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
		throw new InvalidConfigError('(whole file)', 'is not a JSON object', file);
	return parsed as Json;
}

const present = (v: unknown): boolean => v !== undefined && v !== null;

function number(
	obj: Json,
	field: string,
	opts: { integer?: boolean; min?: number; fallback?: number; path?: string } = {}
): number {
	const name = opts.path ?? field;
	const v = obj[field];
	if (!present(v)) {
		if (opts.fallback !== undefined) return opts.fallback;
		throw new MissingConfigFieldError(name);
	}
	if (typeof v !== 'number' || !Number.isFinite(v))
		throw new InvalidConfigError(name, `must be a number, got ${JSON.stringify(v)}`);
	if (opts.integer && !Number.isInteger(v))
		throw new InvalidConfigError(name, `must be an integer, got ${v}`);
	if (opts.min !== undefined && v < opts.min)
		throw new InvalidConfigError(name, `must be at least ${opts.min}, got ${v}`);
	return v;
}

function boolean(obj: Json, field: string, fallback: boolean): boolean {
	const v = obj[field];
	if (!present(v)) return fallback;
	if (typeof v !== 'boolean')
		throw new InvalidConfigError(field, `must be true or false, got ${JSON.stringify(v)}`);
	return v;
}

function architectureOf(raw: Json): Architecture {
	const archs = raw.architectures;
	let name: unknown;
	if (Array.isArray(archs) && archs.length > 0) name = archs[0];
	else if (typeof raw.model_type === 'string' && Object.hasOwn(MODEL_TYPES, raw.model_type))
		return MODEL_TYPES[raw.model_type];
	else if (typeof raw.model_type === 'string')
		throw new UnsupportedArchitectureError(`model_type ${raw.model_type}`, SUPPORTED_ARCHITECTURES);
	else throw new MissingConfigFieldError('architectures');
	if (typeof name !== 'string')
		throw new InvalidConfigError(
			'architectures',
			`must list class names, got ${JSON.stringify(archs)}`
		);
	if (!(SUPPORTED_ARCHITECTURES as readonly string[]).includes(name))
		throw new UnsupportedArchitectureError(name, SUPPORTED_ARCHITECTURES);
	return name as Architecture;
}

/** The rope settings object and where it came from (for messages). */
function ropeSource(raw: Json): { params: Json | null; theta: number; path: string } {
	const rp = raw.rope_parameters;
	if (present(rp)) {
		if (typeof rp !== 'object' || Array.isArray(rp))
			throw new InvalidConfigError('rope_parameters', 'must be an object');
		let params = rp as Json;
		// 5.x may key parameters by layer type; these architectures only have full attention.
		if (!('rope_type' in params) && !('rope_theta' in params) && 'full_attention' in params)
			params = params.full_attention as Json;
		const theta = number(params, 'rope_theta', {
			path: 'rope_parameters.rope_theta',
			fallback: number(raw, 'rope_theta', { fallback: DEFAULT_ROPE_THETA })
		});
		return { params, theta, path: 'rope_parameters' };
	}
	const theta = number(raw, 'rope_theta', { fallback: DEFAULT_ROPE_THETA });
	const rs = raw.rope_scaling;
	if (!present(rs)) return { params: null, theta, path: 'rope_scaling' };
	if (typeof rs !== 'object' || Array.isArray(rs))
		throw new InvalidConfigError('rope_scaling', 'must be an object or null');
	return { params: rs as Json, theta, path: 'rope_scaling' };
}

function parseRope(raw: Json): RopeConfig {
	const { params, theta, path } = ropeSource(raw);
	if (!(theta > 1)) throw new InvalidConfigError(`${path}.rope_theta`, `must be > 1, got ${theta}`);
	const partial = params?.partial_rotary_factor ?? raw.partial_rotary_factor;
	if (present(partial) && partial !== 1)
		throw new UnsupportedConfigError(
			'partial_rotary_factor',
			partial,
			'TabRL rotates the whole head (factor 1) as Llama, Qwen2 and Qwen3 do'
		);
	if (params === null) return { theta, type: 'default' };
	const type = params.rope_type ?? params.type ?? 'default';
	const field = (name: string, min: number, integer = false) =>
		number(params, name, { path: `${path}.${name}`, min, integer });
	if (type === 'default') return { theta, type };
	if (type === 'linear') return { theta, type, factor: field('factor', Number.MIN_VALUE) };
	if (type === 'llama3') {
		const rope: RopeConfig = {
			theta,
			type,
			factor: field('factor', Number.MIN_VALUE),
			lowFreqFactor: field('low_freq_factor', Number.MIN_VALUE),
			highFreqFactor: field('high_freq_factor', Number.MIN_VALUE),
			originalMaxPositionEmbeddings: field('original_max_position_embeddings', 1, true)
		};
		if (!(rope.highFreqFactor! > rope.lowFreqFactor!))
			throw new InvalidConfigError(
				`${path}.high_freq_factor`,
				`must exceed low_freq_factor (${rope.lowFreqFactor}), got ${rope.highFreqFactor}`
			);
		return rope;
	}
	throw new UnsupportedConfigError(
		`${path}.rope_type`,
		type,
		"TabRL implements RoPE types 'default', 'linear' and 'llama3' only"
	);
}

/** Refuses Qwen configs whose layers would use sliding-window attention. */
function refuseSlidingWindow(raw: Json, numLayers: number): void {
	const types = raw.layer_types;
	if (Array.isArray(types) && types.some((t) => t !== 'full_attention'))
		throw new UnsupportedConfigError(
			'layer_types',
			types.find((t) => t !== 'full_attention'),
			'TabRL implements full causal attention only'
		);
	if (!boolean(raw, 'use_sliding_window', false) || !present(raw.sliding_window)) return;
	const firstSliding = number(raw, 'max_window_layers', { fallback: 28, integer: true });
	if (firstSliding < numLayers)
		throw new UnsupportedConfigError(
			'use_sliding_window',
			true,
			`layers ${firstSliding}..${numLayers - 1} would use sliding-window attention, ` +
				'which TabRL does not implement'
		);
}

function tokenIds(v: unknown, field: string, file: string): number[] {
	if (!present(v)) return [];
	const list = Array.isArray(v) ? v : [v];
	for (const id of list)
		if (typeof id !== 'number' || !Number.isInteger(id) || id < 0)
			throw new InvalidConfigError(
				field,
				`must be a token id or a list of them, got ${JSON.stringify(v)}`,
				file
			);
	return list as number[];
}

/**
 * Parses config.json (and optionally generation_config.json), as text or already parsed.
 * Throws UnsupportedArchitectureError, MissingConfigFieldError, InvalidConfigError or
 * UnsupportedConfigError, each naming the field.
 */
export function parseModelConfig(
	configJson: string | Json,
	generationConfigJson?: string | Json
): ModelConfig {
	const raw = asObject(configJson, 'config.json');
	const gen =
		generationConfigJson === undefined
			? {}
			: asObject(generationConfigJson, 'generation_config.json');
	const architecture = architectureOf(raw);
	const int = (field: string, fallback?: number) =>
		number(raw, field, { integer: true, min: 1, fallback });

	const vocabSize = int('vocab_size');
	const hiddenSize = int('hidden_size');
	const intermediateSize = int('intermediate_size');
	const numLayers = int('num_hidden_layers');
	const numHeads = int('num_attention_heads');
	const numKvHeads = int('num_key_value_heads', numHeads);
	if (numHeads % numKvHeads !== 0)
		throw new InvalidConfigError(
			'num_key_value_heads',
			`(${numKvHeads}) must divide num_attention_heads (${numHeads})`
		);

	let headDim: number;
	if (present(raw.head_dim)) headDim = int('head_dim');
	else if (architecture === 'Qwen3ForCausalLM') headDim = QWEN3_DEFAULT_HEAD_DIM;
	else if (hiddenSize % numHeads === 0) headDim = hiddenSize / numHeads;
	else
		throw new InvalidConfigError(
			'head_dim',
			`is absent and hidden_size (${hiddenSize}) is not a multiple of num_attention_heads (${numHeads})`
		);
	if (headDim % 2 !== 0)
		throw new InvalidConfigError('head_dim', `must be even for rotary embeddings, got ${headDim}`);

	const act = raw.hidden_act ?? 'silu';
	if (act !== 'silu')
		throw new UnsupportedConfigError('hidden_act', act, "TabRL's MLP is SwiGLU with SiLU");

	let attentionBias: boolean;
	let outputBias: boolean;
	if (architecture === 'Qwen2ForCausalLM') {
		// Qwen2Attention: q/k/v projections always carry biases, o_proj never does.
		attentionBias = true;
		outputBias = false;
	} else {
		// Llama and Qwen3: attention_bias puts a bias on all four projections.
		attentionBias = outputBias = boolean(raw, 'attention_bias', false);
	}
	if (architecture === 'LlamaForCausalLM' && boolean(raw, 'mlp_bias', false))
		throw new UnsupportedConfigError('mlp_bias', true, 'TabRL has no MLP biases');
	if (architecture !== 'LlamaForCausalLM') refuseSlidingWindow(raw, numLayers);

	const dtypeName = raw.dtype ?? raw.torch_dtype ?? 'float32';
	const dtype =
		typeof dtypeName === 'string' && Object.hasOwn(DTYPES, dtypeName)
			? DTYPES[dtypeName]
			: undefined;
	if (dtype === undefined)
		throw new InvalidConfigError(
			present(raw.dtype) ? 'dtype' : 'torch_dtype',
			`must be float32, float16 or bfloat16, got ${JSON.stringify(dtypeName)}`
		);

	const bos = tokenIds(raw.bos_token_id, 'bos_token_id', 'config.json');
	const genBos = tokenIds(gen.bos_token_id, 'bos_token_id', 'generation_config.json');
	const eosTokenIds = [
		...new Set([
			...tokenIds(raw.eos_token_id, 'eos_token_id', 'config.json'),
			...tokenIds(gen.eos_token_id, 'eos_token_id', 'generation_config.json')
		])
	];

	const config: ModelConfig = {
		architecture,
		vocabSize,
		hiddenSize,
		intermediateSize,
		numLayers,
		numHeads,
		numKvHeads,
		headDim,
		rmsNormEps: number(raw, 'rms_norm_eps', { fallback: DEFAULT_RMS_NORM_EPS, min: 0 }),
		rope: parseRope(raw),
		maxPositionEmbeddings: int('max_position_embeddings', DEFAULT_MAX_POSITIONS[architecture]),
		tieWordEmbeddings: boolean(raw, 'tie_word_embeddings', false),
		attentionBias,
		outputBias,
		qkNorm: architecture === 'Qwen3ForCausalLM',
		dtype,
		eosTokenIds
	};
	const bosId = bos[0] ?? genBos[0];
	if (bosId !== undefined) config.bosTokenId = bosId;
	return config;
}

export interface RopeFrequencies {
	/** f32 [headDim / 2], to upload as the rope kernel's inv_freq. */
	invFreq: Float32Array;
	/** Multiplies cos and sin (transformers' attention_factor); 1 for these types. */
	attentionScaling: number;
}

const f = Math.fround;

/**
 * inv_freq [headDim / 2] as transformers computes it in f32 for rope types 'default'
 * (`_compute_default_rope_parameters`), 'linear' (then divided by factor) and 'llama3'
 * (`_compute_llama3_parameters`: wavelengths above original/low_freq_factor divided by
 * factor, below original/high_freq_factor kept, in between a linear blend in
 * original/wavelength). Each f32 operation is rounded in the order torch evaluates it
 * (`scalar / tensor` is `tensor.reciprocal() * scalar` in torch), so results match torch's
 * CPU computation to the ulp except where torch's own pow differs (see gpu/kernels/rope.ts).
 */
export function ropeInvFreq(config: Pick<ModelConfig, 'rope' | 'headDim'>): RopeFrequencies {
	const { rope, headDim } = config;
	const inv = defaultInvFreq(rope.theta, headDim);
	if (rope.type === 'linear') {
		const factor = f(rope.factor!);
		for (let i = 0; i < inv.length; i++) inv[i] = f(inv[i] / factor);
	} else if (rope.type === 'llama3') {
		const factor = f(rope.factor!);
		const low = f(rope.lowFreqFactor!);
		const old = f(rope.originalMaxPositionEmbeddings!);
		const lowFreqWavelen = f(rope.originalMaxPositionEmbeddings! / rope.lowFreqFactor!);
		const highFreqWavelen = f(rope.originalMaxPositionEmbeddings! / rope.highFreqFactor!);
		const twoPi = f(2 * Math.PI);
		const span = f(rope.highFreqFactor! - rope.lowFreqFactor!);
		for (let i = 0; i < inv.length; i++) {
			const wavelen = f(f(1 / inv[i]) * twoPi);
			const scaled = wavelen > lowFreqWavelen ? f(inv[i] / factor) : inv[i];
			const medium = !(wavelen < highFreqWavelen) && !(wavelen > lowFreqWavelen);
			if (!medium) {
				inv[i] = scaled;
				continue;
			}
			const smooth = f(f(f(f(1 / wavelen) * old) - low) / span);
			inv[i] = f(f(f(f(1 - smooth) * scaled) / factor) + f(smooth * scaled));
		}
	}
	return { invFreq: inv, attentionScaling: 1 };
}
