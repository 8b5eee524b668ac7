/**
 * @file Reads a LoRA adapter as PEFT's `save_pretrained` writes it (adapter_config.json,
 * adapter_model.safetensors, tensors `base_model.model.model.layers.{i}...lora_A.weight`).
 * Only what LoraParameters can represent is accepted: plain LoRA, one rank and alpha, scale
 * alpha / r, no DoRA, biases or extra modules, every layer, targets among the seven
 * projections; anything else is a LoraConfigError naming the setting.
 */
import type { ByteSource } from './byte-source';
import { InvalidConfigError, LoraConfigError, NonFiniteWeightsError } from '../errors';
import { peftName, resolveLoraConfig, type LoraConfig } from '../transformer/lora';
import { decodeToF32, readableDType, readSafetensorsHeader } from './safetensors';
import type { ModelConfig } from '../types';
import { PROJECTIONS, projectionShape, type ProjectionName } from './weight-spec';

export const ADAPTER_CONFIG_FILE = 'adapter_config.json';
export const ADAPTER_WEIGHTS_FILE = 'adapter_model.safetensors';

export interface PeftAdapter {
	/** Rank, alpha and targets as LoraParameters takes them (dropout 0). */
	config: LoraConfig;
	/** A and B by PEFT name (lora.ts `peftName`), f32, row-major. */
	params: Map<string, Float32Array>;
}

export interface ReadPeftAdapterOptions {
	/**
	 * Accept a non-zero `lora_dropout` (read as 0). Dropout acts only in training, so an
	 * adapter trained with it scores the same; training on with it is not supported.
	 */
	ignoreDropout?: boolean;
}

const isEmpty = (v: unknown) =>
	v === undefined ||
	v === null ||
	v === false ||
	(Array.isArray(v) && v.length === 0) ||
	(typeof v === 'object' && v !== null && Object.keys(v).length === 0);

function unsupported(field: string, value: unknown, why: string): never {
	throw new LoraConfigError(
		`${ADAPTER_CONFIG_FILE}: ${field} = ${JSON.stringify(value)} is not supported (${why}). ` +
			'TabRL reads plain LoRA adapters on q/k/v/o/gate/up/down projections.'
	);
}

/** adapter_config.json -> LoraConfig; throws InvalidConfigError / LoraConfigError. */
export function parsePeftAdapterConfig(
	json: string | object,
	options: ReadPeftAdapterOptions = {}
): LoraConfig {
	let raw: unknown = json;
	if (typeof json === 'string') {
		try {
			raw = JSON.parse(json);
		} catch (error) {
			throw new InvalidConfigError(
				'(file)',
				`is not valid JSON (${(error as Error).message})`,
				ADAPTER_CONFIG_FILE
			);
		}
	}
	if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
		throw new InvalidConfigError('(file)', 'is not a JSON object', ADAPTER_CONFIG_FILE);
	const c = raw as Record<string, unknown>;
	const peftType = c.peft_type ?? 'LORA';
	if (peftType !== 'LORA') unsupported('peft_type', peftType, 'only LoRA adapters');
	const num = (field: string): number => {
		const v = c[field];
		if (typeof v !== 'number' || !Number.isFinite(v))
			throw new InvalidConfigError(
				field,
				`must be a number, got ${JSON.stringify(v)}`,
				ADAPTER_CONFIG_FILE
			);
		return v;
	};
	const rank = num('r');
	const alpha = num('lora_alpha');
	const dropout = c.lora_dropout === undefined ? 0 : num('lora_dropout');
	if (c.use_rslora === true) unsupported('use_rslora', true, 'the scale would be alpha / sqrt(r)');
	if (c.use_dora === true) unsupported('use_dora', true, 'DoRA has magnitude vectors');
	if (c.fan_in_fan_out === true) unsupported('fan_in_fan_out', true, 'transposed (Conv1D) weights');
	if ((c.bias ?? 'none') !== 'none') unsupported('bias', c.bias, 'trained biases');
	if (c.lora_bias === true) unsupported('lora_bias', true, 'a bias on lora_B');
	if (c.use_qalora === true) unsupported('use_qalora', true, 'quantization-aware LoRA');
	// These initialisations rewrite the base weights: the adapter needs that residual model.
	const init = c.init_lora_weights;
	if (typeof init === 'string' && /^(pissa|olora|corda|loftq)/i.test(init))
		unsupported('init_lora_weights', init, 'the adapter was made against modified base weights');
	for (const field of [
		'rank_pattern',
		'alpha_pattern',
		'modules_to_save',
		'layers_to_transform',
		'exclude_modules',
		'target_parameters',
		'trainable_token_indices',
		'layer_replication',
		'alora_invocation_tokens',
		'use_bdlora'
	])
		if (!isEmpty(c[field])) unsupported(field, c[field], 'every module must share r and alpha');

	let targets: string[];
	const t = c.target_modules;
	if (t === 'all-linear') targets = [...PROJECTIONS];
	else if (Array.isArray(t) && t.every((m) => typeof m === 'string'))
		// peft matches names by suffix, and saves 'all-linear' resolved to full module paths
		// (model.layers.0.self_attn.q_proj, ...): a path counts as its last component; the
		// tensor check (readPeftAdapter) then requires that component on every layer.
		targets = [...new Set((t as string[]).map((m) => m.split('.').at(-1)!))];
	else if (typeof t === 'string') unsupported('target_modules', t, 'a regular expression');
	else
		throw new InvalidConfigError(
			'target_modules',
			`must be a list of module names, got ${JSON.stringify(t)}`,
			ADAPTER_CONFIG_FILE
		);
	const unknown = targets.filter((m) => !(PROJECTIONS as readonly string[]).includes(m));
	if (unknown.length) unsupported('target_modules', t, `unknown module(s) ${unknown.join(', ')}`);

	return resolveLoraConfig({
		rank,
		alpha,
		dropout: options.ignoreDropout ? 0 : dropout,
		targetModules: targets as ProjectionName[]
	});
}

/**
 * Reads an adapter for `model`: its config, then every A and B, checked against the
 * model's shapes (LoraConfigError on a missing, extra or misshapen tensor) and for NaN or
 * infinite values (NonFiniteWeightsError: scoring or sampling through them gives NaN).
 */
export async function readPeftAdapter(
	model: ModelConfig,
	adapterConfigJson: string | object,
	weights: ByteSource,
	options: ReadPeftAdapterOptions = {}
): Promise<PeftAdapter> {
	const config = parsePeftAdapterConfig(adapterConfigJson, options);
	const header = await readSafetensorsHeader(weights, ADAPTER_WEIGHTS_FILE);
	const expected = new Map<string, number[]>();
	for (let layer = 0; layer < model.numLayers; layer++)
		for (const m of config.targetModules) {
			const [out, inF] = projectionShape(model, m);
			expected.set(peftName(layer, m, 'A'), [config.rank, inF]);
			expected.set(peftName(layer, m, 'B'), [out, config.rank]);
		}
	const missing = [...expected.keys()].filter((n) => !header.tensors.has(n));
	const extra = [...header.tensors.keys()].filter((n) => !expected.has(n));
	const wrong = [...expected]
		.filter(([n, shape]) => {
			const s = header.tensors.get(n)?.shape;
			return s && (s.length !== 2 || s[0] !== shape[0] || s[1] !== shape[1]);
		})
		.map(([n, shape]) => `${n} is [${header.tensors.get(n)!.shape}], expected [${shape}]`);
	if (missing.length || extra.length || wrong.length) {
		const parts = [
			missing.length ? `missing ${missing.length}: ${missing.slice(0, 4).join(', ')}` : '',
			extra.length ? `unexpected ${extra.length}: ${extra.slice(0, 4).join(', ')}` : '',
			wrong.length ? `wrong shape: ${wrong.slice(0, 4).join('; ')}` : ''
		].filter(Boolean);
		throw new LoraConfigError(
			`${ADAPTER_WEIGHTS_FILE} does not match ${ADAPTER_CONFIG_FILE} (r=${config.rank}, ` +
				`${config.targetModules.join(', ')}) on this model (${model.numLayers} layers): ` +
				`${parts.join('; ')}. Check that the adapter was trained on this base model.`
		);
	}
	const params = new Map<string, Float32Array>();
	for (const name of expected.keys()) {
		const t = header.tensors.get(name)!;
		const dtype = readableDType(header, t);
		const values = decodeToF32(await weights.read(t.begin, t.end - t.begin), dtype);
		refuseNonFinite(name, values);
		params.set(name, values);
	}
	return { config, params };
}

function refuseNonFinite(name: string, values: Float32Array): void {
	let count = 0;
	let first = -1;
	for (let i = 0; i < values.length; i++)
		if (!Number.isFinite(values[i])) {
			if (count++ === 0) first = i;
		}
	if (count) throw new NonFiniteWeightsError(ADAPTER_WEIGHTS_FILE, name, count, first);
}
