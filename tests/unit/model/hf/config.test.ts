/**
 * config.json parsing for the published models (their config.json / generation_config.json
 * as on the Hub: the catalog's, hub-models.ts, and Llama 3.2's inline), the transformers 5.x spelling of each, every refusal,
 * and RoPE inv_freq for default / linear / llama3 against the formula evaluated in f64.
 */
import { describe, expect, it } from 'vitest';
import { parseModelConfig, ropeInvFreq } from '../../../../src/lib/model/hf/config';
import {
	InvalidConfigError,
	MissingConfigFieldError,
	UnsupportedArchitectureError,
	UnsupportedConfigError
} from '../../../../src/lib/model/errors';
import { hubModel } from '../../../../src/lib/model/hf/hub-models';
import type { ModelConfig } from '../../../../src/lib/model/types';

const published = (key: string) => {
	const m = hubModel(key)!;
	return [m.config, m.generationConfig] as const;
};
const [SMOLLM2, SMOLLM2_GEN] = published('smollm2-135m');
const [QWEN25, QWEN25_GEN] = published('qwen2.5-0.5b');
const [QWEN3, QWEN3_GEN] = published('qwen3-0.6b');

// meta-llama/Llama-3.2-1B-Instruct (transformers 4.45.0.dev0).
const LLAMA32 = {
	architectures: ['LlamaForCausalLM'],
	attention_bias: false,
	attention_dropout: 0.0,
	bos_token_id: 128000,
	eos_token_id: [128001, 128008, 128009],
	head_dim: 64,
	hidden_act: 'silu',
	hidden_size: 2048,
	initializer_range: 0.02,
	intermediate_size: 8192,
	max_position_embeddings: 131072,
	mlp_bias: false,
	model_type: 'llama',
	num_attention_heads: 32,
	num_hidden_layers: 16,
	num_key_value_heads: 8,
	pretraining_tp: 1,
	rms_norm_eps: 1e-5,
	rope_scaling: {
		factor: 32.0,
		high_freq_factor: 4.0,
		low_freq_factor: 1.0,
		original_max_position_embeddings: 8192,
		rope_type: 'llama3'
	},
	rope_theta: 500000.0,
	tie_word_embeddings: true,
	torch_dtype: 'bfloat16',
	transformers_version: '4.45.0.dev0',
	use_cache: true,
	vocab_size: 128256
};
const LLAMA32_GEN = {
	bos_token_id: 128000,
	do_sample: true,
	eos_token_id: [128001, 128008, 128009],
	temperature: 0.6,
	top_p: 0.9,
	transformers_version: '4.45.0.dev0'
};

/** The same config as transformers 5.x writes it: rope_parameters and dtype. */
function as5x(raw: Record<string, unknown>): Record<string, unknown> {
	const { rope_theta, rope_scaling, torch_dtype, ...rest } = raw;
	const scaling = (rope_scaling ?? { rope_type: 'default' }) as Record<string, unknown>;
	return {
		...rest,
		rope_parameters: { ...scaling, rope_theta },
		dtype: torch_dtype,
		transformers_version: '5.0.0'
	};
}

const EXPECTED: Record<string, [Record<string, unknown>, Record<string, unknown>, ModelConfig]> = {
	'SmolLM2-135M-Instruct': [
		SMOLLM2,
		SMOLLM2_GEN,
		{
			architecture: 'LlamaForCausalLM',
			vocabSize: 49152,
			hiddenSize: 576,
			intermediateSize: 1536,
			numLayers: 30,
			numHeads: 9,
			numKvHeads: 3,
			headDim: 64,
			rmsNormEps: 1e-5,
			rope: { theta: 100000, type: 'default' },
			maxPositionEmbeddings: 8192,
			tieWordEmbeddings: true,
			attentionBias: false,
			outputBias: false,
			qkNorm: false,
			dtype: 'bfloat16',
			bosTokenId: 1,
			eosTokenIds: [2]
		}
	],
	'Qwen2.5-0.5B-Instruct': [
		QWEN25,
		QWEN25_GEN,
		{
			architecture: 'Qwen2ForCausalLM',
			vocabSize: 151936,
			hiddenSize: 896,
			intermediateSize: 4864,
			numLayers: 24,
			numHeads: 14,
			numKvHeads: 2,
			headDim: 64,
			rmsNormEps: 1e-6,
			rope: { theta: 1e6, type: 'default' },
			maxPositionEmbeddings: 32768,
			tieWordEmbeddings: true,
			attentionBias: true,
			outputBias: false,
			qkNorm: false,
			dtype: 'bfloat16',
			bosTokenId: 151643,
			eosTokenIds: [151645, 151643]
		}
	],
	'Qwen3-0.6B': [
		QWEN3,
		QWEN3_GEN,
		{
			architecture: 'Qwen3ForCausalLM',
			vocabSize: 151936,
			hiddenSize: 1024,
			intermediateSize: 3072,
			numLayers: 28,
			numHeads: 16,
			numKvHeads: 8,
			headDim: 128,
			rmsNormEps: 1e-6,
			rope: { theta: 1e6, type: 'default' },
			maxPositionEmbeddings: 40960,
			tieWordEmbeddings: true,
			attentionBias: false,
			outputBias: false,
			qkNorm: true,
			dtype: 'bfloat16',
			bosTokenId: 151643,
			eosTokenIds: [151645, 151643]
		}
	],
	'Llama-3.2-1B-Instruct': [
		LLAMA32,
		LLAMA32_GEN,
		{
			architecture: 'LlamaForCausalLM',
			vocabSize: 128256,
			hiddenSize: 2048,
			intermediateSize: 8192,
			numLayers: 16,
			numHeads: 32,
			numKvHeads: 8,
			headDim: 64,
			rmsNormEps: 1e-5,
			rope: {
				theta: 500000,
				type: 'llama3',
				factor: 32,
				lowFreqFactor: 1,
				highFreqFactor: 4,
				originalMaxPositionEmbeddings: 8192
			},
			maxPositionEmbeddings: 131072,
			tieWordEmbeddings: true,
			attentionBias: false,
			outputBias: false,
			qkNorm: false,
			dtype: 'bfloat16',
			bosTokenId: 128000,
			eosTokenIds: [128001, 128008, 128009]
		}
	]
};

describe('parseModelConfig: published models', () => {
	for (const [name, [raw, gen, expected]] of Object.entries(EXPECTED)) {
		it(`${name} (4.x spelling, as published)`, () => {
			expect(parseModelConfig(JSON.stringify(raw), JSON.stringify(gen))).toEqual(expected);
		});
		it(`${name} (5.x spelling: rope_parameters, dtype)`, () => {
			expect(parseModelConfig(as5x(raw), gen)).toEqual(expected);
		});
	}

	it('merges eos ids from config and generation_config in order, without repeats', () => {
		const c = parseModelConfig({ ...SMOLLM2, eos_token_id: [2, 5] }, { eos_token_id: [7, 2] });
		expect(c.eosTokenIds).toEqual([2, 5, 7]);
		expect(parseModelConfig({ ...SMOLLM2, eos_token_id: null }).eosTokenIds).toEqual([]);
		const noBos = parseModelConfig({ ...SMOLLM2, bos_token_id: null }, { bos_token_id: 9 });
		expect(noBos.bosTokenId).toBe(9);
		// config.json wins where both give one.
		expect(parseModelConfig(SMOLLM2, { bos_token_id: 9 }).bosTokenId).toBe(1);
	});

	it('uses transformers defaults for absent optional fields', () => {
		const minimal = {
			architectures: ['LlamaForCausalLM'],
			vocab_size: 100,
			hidden_size: 64,
			intermediate_size: 128,
			num_hidden_layers: 2,
			num_attention_heads: 4
		};
		expect(parseModelConfig(minimal)).toEqual({
			architecture: 'LlamaForCausalLM',
			vocabSize: 100,
			hiddenSize: 64,
			intermediateSize: 128,
			numLayers: 2,
			numHeads: 4,
			numKvHeads: 4,
			headDim: 16,
			rmsNormEps: 1e-6,
			rope: { theta: 10000, type: 'default' },
			maxPositionEmbeddings: 2048,
			tieWordEmbeddings: false,
			attentionBias: false,
			outputBias: false,
			qkNorm: false,
			dtype: 'float32',
			eosTokenIds: []
		});
		// Qwen3Config's head_dim default is 128, not hidden / heads.
		const q3 = parseModelConfig({ ...minimal, architectures: ['Qwen3ForCausalLM'] });
		expect(q3.headDim).toBe(128);
		expect(q3.maxPositionEmbeddings).toBe(32768);
		// No "architectures": model_type decides.
		const { architectures: _drop, ...noArch } = QWEN25;
		void _drop;
		expect(parseModelConfig(noArch).architecture).toBe('Qwen2ForCausalLM');
	});

	it('reads attention_bias for Llama (all four projections) and Qwen3', () => {
		const l = parseModelConfig({ ...SMOLLM2, attention_bias: true });
		expect([l.attentionBias, l.outputBias]).toEqual([true, true]);
		const q = parseModelConfig({ ...QWEN3, attention_bias: true });
		expect([q.attentionBias, q.outputBias]).toEqual([true, true]);
	});

	it("accepts rope_scaling's older 'type' key and linear scaling", () => {
		const c = parseModelConfig({ ...SMOLLM2, rope_scaling: { type: 'linear', factor: 4.0 } });
		expect(c.rope).toEqual({ theta: 100000, type: 'linear', factor: 4 });
	});
});

describe('parseModelConfig: refusals', () => {
	it('refuses other architectures, naming the one found and the supported ones', () => {
		for (const arch of ['GPT2LMHeadModel', 'MistralForCausalLM', 'Qwen2MoeForCausalLM']) {
			const run = () => parseModelConfig({ ...SMOLLM2, architectures: [arch] });
			expect(run).toThrow(UnsupportedArchitectureError);
			expect(run).toThrow(arch);
			expect(run).toThrow(/LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM/);
		}
		const { architectures: _a, ...noArch } = SMOLLM2;
		void _a;
		expect(() => parseModelConfig({ ...noArch, model_type: 'gpt2' })).toThrow(
			UnsupportedArchitectureError
		);
		expect(() => parseModelConfig({ ...noArch, model_type: undefined })).toThrow(
			MissingConfigFieldError
		);
	});

	it('names each missing required field', () => {
		for (const field of [
			'vocab_size',
			'hidden_size',
			'intermediate_size',
			'num_hidden_layers',
			'num_attention_heads'
		]) {
			const raw: Record<string, unknown> = { ...QWEN25 };
			delete raw[field];
			const run = () => parseModelConfig(raw);
			expect(run).toThrow(MissingConfigFieldError);
			expect(run).toThrow(`"${field}"`);
		}
		const { factor: _f, ...noFactor } = LLAMA32.rope_scaling;
		void _f;
		expect(() => parseModelConfig({ ...LLAMA32, rope_scaling: noFactor })).toThrow(
			/rope_scaling\.factor/
		);
	});

	it('refuses wrong types, bad values and bad JSON with InvalidConfigError', () => {
		const cases: [Record<string, unknown>, RegExp][] = [
			[{ ...QWEN25, hidden_size: '896' }, /hidden_size.*number/],
			[{ ...QWEN25, num_hidden_layers: 2.5 }, /num_hidden_layers.*integer/],
			[{ ...QWEN25, num_attention_heads: 0 }, /num_attention_heads.*at least 1/],
			[{ ...QWEN25, num_key_value_heads: 3 }, /num_key_value_heads.*divide/],
			[{ ...QWEN25, head_dim: 63 }, /head_dim.*even/],
			[{ ...SMOLLM2, hidden_size: 577, head_dim: undefined }, /head_dim/],
			[{ ...QWEN25, torch_dtype: 'int8' }, /torch_dtype/],
			[{ ...QWEN25, tie_word_embeddings: 'yes' }, /tie_word_embeddings/],
			[{ ...QWEN25, eos_token_id: 'x' }, /eos_token_id/],
			[{ ...QWEN25, rope_theta: 0.5 }, /rope_theta/]
		];
		for (const [raw, message] of cases) {
			const run = () => parseModelConfig(raw);
			expect(run).toThrow(InvalidConfigError);
			expect(run).toThrow(message);
		}
		expect(() => parseModelConfig('{"vocab_size": 3,')).toThrow(InvalidConfigError);
		expect(() => parseModelConfig('[1, 2]')).toThrow(InvalidConfigError);
		expect(() => parseModelConfig(QWEN25, '{oops')).toThrow(/generation_config\.json/);
	});

	it('refuses what the forward pass would compute differently', () => {
		const cases: [Record<string, unknown>, RegExp][] = [
			[{ ...SMOLLM2, mlp_bias: true }, /mlp_bias/],
			[{ ...SMOLLM2, hidden_act: 'gelu' }, /hidden_act/],
			[{ ...SMOLLM2, rope_scaling: { rope_type: 'dynamic', factor: 2.0 } }, /dynamic/],
			[{ ...SMOLLM2, rope_scaling: { rope_type: 'yarn', factor: 4.0 } }, /yarn/],
			[{ ...SMOLLM2, partial_rotary_factor: 0.5 }, /partial_rotary_factor/],
			[{ ...QWEN25, use_sliding_window: true, max_window_layers: 21 }, /sliding-window/],
			[{ ...QWEN3, layer_types: ['full_attention', 'sliding_attention'] }, /layer_types/]
		];
		for (const [raw, message] of cases) {
			const run = () => parseModelConfig(raw);
			expect(run).toThrow(UnsupportedConfigError);
			expect(run).toThrow(message);
		}
		// Sliding window switched on but starting past the last layer: no layer slides.
		expect(() =>
			parseModelConfig({ ...QWEN25, use_sliding_window: true, max_window_layers: 24 })
		).not.toThrow();
	});
});

/** transformers' llama3 rule in f64, straight from its description. */
function llama3F64(theta: number, dim: number, s: Record<string, number>): number[] {
	const out: number[] = [];
	const lowWl = s.original / s.low;
	const highWl = s.original / s.high;
	for (let i = 0; i < dim / 2; i++) {
		const inv = 1 / theta ** ((2 * i) / dim);
		const wl = (2 * Math.PI) / inv;
		if (wl < highWl) out.push(inv);
		else if (wl > lowWl) out.push(inv / s.factor);
		else {
			const t = (s.original / wl - s.low) / (s.high - s.low);
			out.push(((1 - t) * inv) / s.factor + t * inv);
		}
	}
	return out;
}

describe('ropeInvFreq', () => {
	it('default: theta^(-2i/D)', () => {
		const { invFreq, attentionScaling } = ropeInvFreq(parseModelConfig(QWEN25));
		expect(invFreq.length).toBe(32);
		expect(attentionScaling).toBe(1);
		const want = Array.from({ length: 32 }, (_, i) => 1e6 ** (-(2 * i) / 64));
		expect(invFreq).toBeAllclose(want, { rtol: 1e-6, atol: 0 });
	});

	it('linear: default divided by factor', () => {
		const c = parseModelConfig({ ...SMOLLM2, rope_scaling: { rope_type: 'linear', factor: 4.0 } });
		const want = Array.from({ length: 32 }, (_, i) => 1e5 ** (-(2 * i) / 64) / 4);
		expect(ropeInvFreq(c).invFreq).toBeAllclose(want, { rtol: 1e-6, atol: 0 });
	});

	it('llama3 (Llama-3.2-1B): each band against the f64 formula', () => {
		const c = parseModelConfig(LLAMA32);
		const { invFreq, attentionScaling } = ropeInvFreq(c);
		expect(attentionScaling).toBe(1);
		const want = llama3F64(500000, 64, { factor: 32, low: 1, high: 4, original: 8192 });
		// f32 evaluation vs f64: the blend loses a few ulps.
		expect(invFreq).toBeAllclose(want, { rtol: 2e-6, atol: 0 });
		// High frequencies (wavelength < 8192 / 4) unchanged, low ones divided by 32.
		const plain = ropeInvFreq({ ...c, rope: { theta: 500000, type: 'default' } }).invFreq;
		const wl = (i: number) => (2 * Math.PI) / plain[i];
		let kept = 0;
		let divided = 0;
		let blended = 0;
		for (let i = 0; i < 32; i++) {
			if (wl(i) < 2048) {
				expect(invFreq[i]).toBe(plain[i]);
				kept++;
			} else if (wl(i) > 8192) {
				expect(invFreq[i]).toBeCloseTo(plain[i] / 32, 12);
				divided++;
			} else {
				expect(invFreq[i]).toBeLessThan(plain[i]);
				expect(invFreq[i]).toBeGreaterThan(plain[i] / 32);
				blended++;
			}
		}
		expect([kept > 0, divided > 0, blended > 0]).toEqual([true, true, true]);
	});

	it('llama3 by hand: D = 8, theta 1e4, original 1024, factor 8', () => {
		// inv = 1, 0.1, 0.01, 0.001; wavelengths 6.28, 62.8, 628, 6283 against 256 / 1024:
		// kept, kept, blended with t = (1024 / 628.3 - 1) / 3, divided by 8.
		const { invFreq } = ropeInvFreq({
			headDim: 8,
			rope: {
				theta: 10000,
				type: 'llama3',
				factor: 8,
				lowFreqFactor: 1,
				highFreqFactor: 4,
				originalMaxPositionEmbeddings: 1024
			}
		});
		const t = (1024 / (2 * Math.PI * 100) - 1) / 3;
		expect(invFreq).toBeAllclose([1, 0.1, (1 - t) * 0.00125 + t * 0.01, 0.000125], {
			rtol: 1e-6,
			atol: 0
		});
	});
});
