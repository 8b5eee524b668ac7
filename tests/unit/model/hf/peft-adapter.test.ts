/**
 * Reading PEFT adapters (peft-adapter.ts): configs as PEFT writes them, tensors exact in
 * F32 / BF16, and every unsupported setting or mismatched tensor refused with a typed error.
 * No GPU.
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../../../../src/lib/util/random';
import { memoryByteSource } from '../../../../src/lib/model/hf/byte-source';
import {
	InvalidConfigError,
	LoraConfigError,
	NonFiniteWeightsError
} from '../../../../src/lib/model/errors';
import { peftName } from '../../../../src/lib/model/transformer/lora';
import { parsePeftAdapterConfig, readPeftAdapter } from '../../../../src/lib/model/hf/peft-adapter';
import {
	encodeSafetensors,
	roundToDType,
	type TensorToWrite,
	type WritableDType
} from '../../../../src/lib/model/hf/safetensors-writer';
import type { ModelConfig } from '../../../../src/lib/model/types';
import {
	PROJECTIONS,
	projectionShape,
	type ProjectionName
} from '../../../../src/lib/model/hf/weight-spec';
import { TINY } from '../tiny-models';

/** adapter_config.json as PEFT 0.17 writes it for LoraConfig(r=8, lora_alpha=16, ...). */
function peftConfig(over: Record<string, unknown> = {}): Record<string, unknown> {
	return {
		alpha_pattern: {},
		auto_mapping: null,
		base_model_name_or_path: '/tmp/parity/llama/model',
		bias: 'none',
		corda_config: null,
		eva_config: null,
		exclude_modules: null,
		fan_in_fan_out: false,
		inference_mode: true,
		init_lora_weights: true,
		layer_replication: null,
		layers_pattern: null,
		layers_to_transform: null,
		loftq_config: {},
		lora_alpha: 16,
		lora_bias: false,
		lora_dropout: 0.0,
		megatron_config: null,
		megatron_core: 'megatron.core',
		modules_to_save: null,
		peft_type: 'LORA',
		r: 8,
		rank_pattern: {},
		revision: null,
		target_modules: ['v_proj', 'q_proj', 'down_proj', 'k_proj', 'o_proj', 'up_proj', 'gate_proj'],
		target_parameters: null,
		task_type: 'CAUSAL_LM',
		trainable_token_indices: null,
		use_dora: false,
		use_qalora: false,
		use_rslora: false,
		...over
	};
}

function adapterTensors(
	config: ModelConfig,
	rank: number,
	modules: readonly ProjectionName[],
	dtype: WritableDType,
	seed = 1
): TensorToWrite[] {
	const rng = new Rng(seed);
	const out: TensorToWrite[] = [];
	for (let layer = 0; layer < config.numLayers; layer++)
		for (const m of modules) {
			const [o, i] = projectionShape(config, m);
			out.push({
				name: peftName(layer, m, 'A'),
				dtype,
				shape: [rank, i],
				data: rng.normals(rank * i)
			});
			out.push({
				name: peftName(layer, m, 'B'),
				dtype,
				shape: [o, rank],
				data: rng.normals(o * rank)
			});
		}
	return out;
}

describe('PEFT adapter config', () => {
	it('reads r, alpha and the target modules (in PROJECTIONS order)', () => {
		const c = parsePeftAdapterConfig(JSON.stringify(peftConfig()));
		expect(c).toEqual({ rank: 8, alpha: 16, dropout: 0, targetModules: [...PROJECTIONS] });
		const d = parsePeftAdapterConfig(
			peftConfig({ r: 4, lora_alpha: 8, target_modules: ['o_proj', 'q_proj'] })
		);
		expect(d).toMatchObject({ rank: 4, alpha: 8, targetModules: ['q_proj', 'o_proj'] });
		expect(
			parsePeftAdapterConfig(peftConfig({ target_modules: 'all-linear' })).targetModules
		).toEqual([...PROJECTIONS]);
		// peft 0.21 saves 'all-linear' resolved to full module paths (seen on the GPU machine).
		const paths = [0, 1].flatMap((l) => [
			`model.layers.${l}.self_attn.q_proj`,
			`model.layers.${l}.mlp.down_proj`
		]);
		expect(parsePeftAdapterConfig(peftConfig({ target_modules: paths })).targetModules).toEqual([
			'q_proj',
			'down_proj'
		]);
	});

	it('dropout is refused unless ignoreDropout (it only acts in training)', () => {
		expect(() => parsePeftAdapterConfig(peftConfig({ lora_dropout: 0.05 }))).toThrow(
			LoraConfigError
		);
		expect(
			parsePeftAdapterConfig(peftConfig({ lora_dropout: 0.05 }), { ignoreDropout: true }).dropout
		).toBe(0);
	});

	const refused: [string, Record<string, unknown>, RegExp][] = [
		['rsLoRA', { use_rslora: true }, /use_rslora/],
		['DoRA', { use_dora: true }, /use_dora/],
		['trained biases', { bias: 'all' }, /bias/],
		['rank pattern', { rank_pattern: { q_proj: 4 } }, /rank_pattern/],
		['alpha pattern', { alpha_pattern: { q_proj: 4 } }, /alpha_pattern/],
		['modules_to_save', { modules_to_save: ['lm_head'] }, /modules_to_save/],
		['some layers', { layers_to_transform: [0] }, /layers_to_transform/],
		['a regex target', { target_modules: '.*proj' }, /regular expression/],
		['an unknown module', { target_modules: ['q_proj', 'embed_tokens'] }, /embed_tokens/],
		['another PEFT type', { peft_type: 'IA3' }, /peft_type/],
		['fan_in_fan_out', { fan_in_fan_out: true }, /fan_in_fan_out/],
		['PiSSA init (modified base)', { init_lora_weights: 'pissa_niter_4' }, /init_lora_weights/],
		['layer replication', { layer_replication: [[0, 2]] }, /layer_replication/],
		['activated LoRA', { alora_invocation_tokens: [5, 6] }, /alora_invocation_tokens/]
	];
	for (const [what, over, re] of refused)
		it(`refuses ${what}`, () => {
			expect(() => parsePeftAdapterConfig(peftConfig(over))).toThrow(LoraConfigError);
			expect(() => parsePeftAdapterConfig(peftConfig(over))).toThrow(re);
		});

	it('bad JSON and bad field types are InvalidConfigError', () => {
		expect(() => parsePeftAdapterConfig('{"r": 8,')).toThrow(InvalidConfigError);
		expect(() => parsePeftAdapterConfig('[1]')).toThrow(InvalidConfigError);
		expect(() => parsePeftAdapterConfig(peftConfig({ r: '8' }))).toThrow(InvalidConfigError);
		expect(() => parsePeftAdapterConfig(peftConfig({ target_modules: null }))).toThrow(
			InvalidConfigError
		);
		expect(() => parsePeftAdapterConfig(peftConfig({ r: 0 }))).toThrow(LoraConfigError);
	});
});

describe('PEFT adapter tensors', () => {
	const config = TINY.qwen3;

	for (const dtype of ['F32', 'BF16'] as const)
		it(`reads every A and B exactly as stored (${dtype})`, async () => {
			const tensors = adapterTensors(config, 8, PROJECTIONS, dtype);
			const bytes = encodeSafetensors(tensors);
			const adapter = await readPeftAdapter(config, peftConfig(), memoryByteSource(bytes));
			expect(adapter.params.size).toBe(config.numLayers * 7 * 2);
			for (const t of tensors)
				expect(adapter.params.get(t.name)).toEqual(roundToDType(t.data, dtype));
		});

	it('reads an adapter on some modules only', async () => {
		const mods: ProjectionName[] = ['q_proj', 'v_proj'];
		const bytes = encodeSafetensors(adapterTensors(config, 2, mods, 'F32'));
		const a = await readPeftAdapter(
			config,
			peftConfig({ r: 2, lora_alpha: 4, target_modules: mods }),
			memoryByteSource(bytes)
		);
		expect(a.config).toMatchObject({ rank: 2, alpha: 4, targetModules: mods });
		expect(a.params.size).toBe(config.numLayers * 2 * 2);
	});

	it('refuses missing, extra and misshapen tensors, naming them', async () => {
		const all = adapterTensors(config, 8, PROJECTIONS, 'F32');
		const read = (tensors: TensorToWrite[], over: Record<string, unknown> = {}, model = config) =>
			readPeftAdapter(model, peftConfig(over), memoryByteSource(encodeSafetensors(tensors)));
		await expect(read(all.slice(1))).rejects.toThrow(
			/missing 1: .*layers\.0\.self_attn\.q_proj\.lora_A/
		);
		const extra = { ...all[0], name: 'base_model.model.lm_head.lora_A.weight' };
		await expect(read([...all, extra])).rejects.toThrow(/unexpected 1: .*lm_head/);
		// The adapter of another model: a wider hidden size.
		await expect(read(all, {}, { ...config, hiddenSize: 64 })).rejects.toThrow(/wrong shape/);
		// Rank 8 tensors under a config that says 4.
		await expect(read(all, { r: 4 })).rejects.toThrow(LoraConfigError);
		// A config with fewer modules than the file holds.
		await expect(read(all, { target_modules: ['q_proj'] })).rejects.toThrow(/unexpected/);
	});

	it('refuses a NaN or an infinity in a weight, naming the tensor (typed, before any use)', async () => {
		for (const bad of [NaN, -Infinity]) {
			const tensors = adapterTensors(config, 2, ['v_proj'], 'F32');
			const poisoned = Float32Array.from(tensors[3].data);
			poisoned[7] = bad;
			tensors[3] = { ...tensors[3], data: poisoned };
			const read = readPeftAdapter(
				config,
				peftConfig({ r: 2, lora_alpha: 4, target_modules: ['v_proj'] }),
				memoryByteSource(encodeSafetensors(tensors))
			);
			await expect(read).rejects.toThrow(NonFiniteWeightsError);
			await expect(read).rejects.toThrow(
				new RegExp(`${tensors[3].name.replaceAll('.', '\\.')} .*1 non-finite value.*index 7`)
			);
		}
	});
});
