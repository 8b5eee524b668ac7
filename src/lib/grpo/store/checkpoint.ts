/**
 * @file A training checkpoint as named files, as ART saves a step and PEFT reads it:
 * adapter_config.json and adapter_model.safetensors (a PEFT adapter alone: loaded as step 0
 * with a fresh optimizer), optimizer.safetensors (AdamW's exp_avg, exp_avg_sq) and
 * trainer_state.json (step, base, fingerprint, metrics). Everything is checked before
 * anything is applied: CheckpointCorruptError, or AdapterMismatchError for another shape.
 */
import { portableBaseName } from '../../model/hf/base-name';
import { memoryByteSource } from '../../model/hf/byte-source';
import { InvalidConfigError, LoraConfigError, ModelError } from '../../model/errors';
import type { LoraConfig, LoraParameters } from '../../model/transformer/lora';
import {
	ADAPTER_CONFIG_FILE,
	ADAPTER_WEIGHTS_FILE,
	parsePeftAdapterConfig,
	readPeftAdapter
} from '../../model/hf/peft-adapter';
import { decodeToF32, readableDType, readSafetensorsHeader } from '../../model/hf/safetensors';
import { encodeSafetensors } from '../../model/hf/safetensors-writer';
import type { ModelConfig } from '../../model/types';
import { AdapterMismatchError, CheckpointCorruptError } from '../errors';
import type { LoraOptimizer } from '../optimizer';

export const OPTIMIZER_FILE = 'optimizer.safetensors';
export const TRAINER_STATE_FILE = 'trainer_state.json';
/** The step's trained trajectory groups, in ART's JSONL (agent/jsonl.ts), when given. */
export const TRAJECTORIES_FILE = 'trajectories.jsonl';
export const CHECKPOINT_FORMAT = 'tabrl-checkpoint';
export const CHECKPOINT_VERSION = 1;

/** The numbers that decide whether an adapter fits a model. */
export interface ModelFingerprint {
	architecture: string;
	numLayers: number;
	hiddenSize: number;
	intermediateSize: number;
	numHeads: number;
	numKvHeads: number;
	headDim: number;
	vocabSize: number;
}

export interface TrainingCheckpoint {
	/** Optimizer steps taken when it was saved (0: a fresh or weights-only adapter). */
	step: number;
	/** AdamW's update count (its t) when several updates made a step; absent: `step`. */
	updates?: number;
	lora: LoraConfig;
	/** Where the base model came from (a folder, a URL prefix, a hub id). */
	baseModel: string;
	/** Absent for a PEFT folder that did not come from TabRL. */
	fingerprint?: ModelFingerprint;
	/** A and B by PEFT name, f32. */
	params: Map<string, Float32Array>;
	/** AdamW's moments by PEFT name; absent: a weights-only adapter (fresh optimizer). */
	optimizer?: { m: Map<string, Float32Array>; v: Map<string, Float32Array> };
	/** The metrics of the step that produced it. */
	metrics: Record<string, number>;
	/** ISO time it was saved. */
	created: string;
}

export type CheckpointFiles = Map<string, Uint8Array>;

export function modelFingerprint(c: ModelConfig): ModelFingerprint {
	return {
		architecture: c.architecture,
		numLayers: c.numLayers,
		hiddenSize: c.hiddenSize,
		intermediateSize: c.intermediateSize,
		numHeads: c.numHeads,
		numKvHeads: c.numKvHeads,
		headDim: c.headDim,
		vocabSize: c.vocabSize
	};
}

/**
 * PEFT's adapter_config.json for `lora` (fields as LoraConfig.save_pretrained writes them); the
 * base named portably (base-name.ts: a Hub id or a model's name, never a local path).
 */
export function peftAdapterConfig(lora: LoraConfig, baseModel: string): Record<string, unknown> {
	return {
		peft_type: 'LORA',
		task_type: 'CAUSAL_LM',
		base_model_name_or_path: portableBaseName(baseModel),
		r: lora.rank,
		lora_alpha: lora.alpha,
		lora_dropout: 0,
		target_modules: [...lora.targetModules],
		bias: 'none',
		fan_in_fan_out: false,
		inference_mode: true,
		init_lora_weights: true,
		use_rslora: false,
		use_dora: false,
		modules_to_save: null,
		layers_to_transform: null,
		layers_pattern: null,
		rank_pattern: {},
		alpha_pattern: {},
		revision: null
	};
}

/** Reads the adapter's weights and AdamW state off the GPU (one batched readback). */
export async function captureCheckpoint(
	lora: LoraParameters,
	optimizer: LoraOptimizer,
	meta: { baseModel: string; modelConfig: ModelConfig; metrics?: Record<string, number> }
): Promise<TrainingCheckpoint> {
	const { step, updates } = optimizer;
	const { params, state } = await lora.readWithState();
	return {
		step,
		...(updates !== step ? { updates } : {}),
		lora: lora.config,
		baseModel: meta.baseModel,
		fingerprint: modelFingerprint(meta.modelConfig),
		params,
		optimizer: state,
		metrics: { ...(meta.metrics ?? {}) },
		created: new Date().toISOString()
	};
}

const text = (value: unknown) => new TextEncoder().encode(JSON.stringify(value, null, 2) + '\n');

/** [r, in] for A and [out, r] for B, from a PEFT name. */
function shapeOf(name: string, values: Float32Array, rank: number): number[] {
	return name.endsWith('lora_A.weight')
		? [rank, values.length / rank]
		: [values.length / rank, rank];
}

export function encodeTrainingCheckpoint(c: TrainingCheckpoint): CheckpointFiles {
	const files: CheckpointFiles = new Map();
	const names = [...c.params.keys()].sort();
	files.set(ADAPTER_CONFIG_FILE, text(peftAdapterConfig(c.lora, c.baseModel)));
	files.set(
		ADAPTER_WEIGHTS_FILE,
		encodeSafetensors(
			names.map((name) => ({
				name,
				dtype: 'F32',
				shape: shapeOf(name, c.params.get(name)!, c.lora.rank),
				data: c.params.get(name)!
			})),
			{ format: 'pt' }
		)
	);
	if (c.optimizer) {
		const { m, v } = c.optimizer;
		files.set(
			OPTIMIZER_FILE,
			encodeSafetensors(
				names.flatMap((name) => {
					const shape = shapeOf(name, c.params.get(name)!, c.lora.rank);
					return [
						{ name: `${name}.exp_avg`, dtype: 'F32' as const, shape, data: m.get(name)! },
						{ name: `${name}.exp_avg_sq`, dtype: 'F32' as const, shape, data: v.get(name)! }
					];
				})
			)
		);
	}
	files.set(
		TRAINER_STATE_FILE,
		text({
			format: CHECKPOINT_FORMAT,
			version: CHECKPOINT_VERSION,
			step: c.step,
			...(c.updates !== undefined ? { adam_updates: c.updates } : {}),
			base_model: c.baseModel,
			model: c.fingerprint ?? null,
			metrics: c.metrics,
			created: c.created
		})
	);
	return files;
}

export interface DecodeExpectation {
	/** The model the adapter must fit. */
	modelConfig: ModelConfig;
	/** When given, the adapter's rank, alpha and targets must be these. */
	lora?: LoraConfig;
	/** Names the checkpoint in errors (e.g. 'checkpoints/0003'). */
	where?: string;
}

export function sameLora(a: LoraConfig, b: LoraConfig): boolean {
	return (
		a.rank === b.rank && a.alpha === b.alpha && a.targetModules.join() === b.targetModules.join()
	);
}

const describeLora = (l: LoraConfig) =>
	`r=${l.rank}, alpha=${l.alpha}, targets ${l.targetModules.join(',')}`;

function parseJson(bytes: Uint8Array, file: string, where: string): Record<string, unknown> {
	let value: unknown;
	try {
		value = JSON.parse(new TextDecoder().decode(bytes));
	} catch (error) {
		throw new CheckpointCorruptError(
			where,
			`${file} is not valid JSON (${(error as Error).message})`
		);
	}
	if (typeof value !== 'object' || value === null || Array.isArray(value))
		throw new CheckpointCorruptError(where, `${file} is not a JSON object`);
	return value as Record<string, unknown>;
}

async function readOptimizer(
	bytes: Uint8Array,
	params: Map<string, Float32Array>,
	where: string
): Promise<{ m: Map<string, Float32Array>; v: Map<string, Float32Array> }> {
	const source = memoryByteSource(bytes);
	let header;
	try {
		header = await readSafetensorsHeader(source, OPTIMIZER_FILE);
	} catch (error) {
		throw new CheckpointCorruptError(where, `${OPTIMIZER_FILE}: ${(error as Error).message}`);
	}
	const m = new Map<string, Float32Array>();
	const v = new Map<string, Float32Array>();
	for (const [name, p] of params)
		for (const [suffix, into] of [
			['exp_avg', m],
			['exp_avg_sq', v]
		] as const) {
			const t = header.tensors.get(`${name}.${suffix}`);
			if (!t) throw new CheckpointCorruptError(where, `${OPTIMIZER_FILE} has no ${name}.${suffix}`);
			const values = decodeToF32(
				await source.read(t.begin, t.end - t.begin),
				readableDType(header, t)
			);
			if (values.length !== p.length)
				throw new CheckpointCorruptError(
					where,
					`${OPTIMIZER_FILE}: ${name}.${suffix} has ${values.length} values, the parameter ${p.length}`
				);
			into.set(name, values);
		}
	if (header.tensors.size !== 2 * params.size)
		throw new CheckpointCorruptError(
			where,
			`${OPTIMIZER_FILE} holds ${header.tensors.size} tensors; the adapter needs ${2 * params.size}`
		);
	return { m, v };
}

/** Reads and checks a checkpoint (or a PEFT-only folder) for `expect.modelConfig`. */
export async function decodeTrainingCheckpoint(
	files: ReadonlyMap<string, Uint8Array>,
	expect: DecodeExpectation
): Promise<TrainingCheckpoint> {
	const where = expect.where ?? '(files)';
	const configBytes = files.get(ADAPTER_CONFIG_FILE);
	const weightBytes = files.get(ADAPTER_WEIGHTS_FILE);
	if (!configBytes || !weightBytes)
		throw new CheckpointCorruptError(
			where,
			`needs ${ADAPTER_CONFIG_FILE} and ${ADAPTER_WEIGHTS_FILE}; it has ${[...files.keys()].join(', ') || 'no files'}`
		);
	const adapterConfig = parseJson(configBytes, ADAPTER_CONFIG_FILE, where);
	let lora: LoraConfig;
	try {
		lora = parsePeftAdapterConfig(adapterConfig, { ignoreDropout: true });
	} catch (error) {
		// A field of the wrong type is a damaged file; a well-formed LoRA we cannot apply
		// (DoRA, unknown targets, ...) is a foreign adapter.
		if (error instanceof InvalidConfigError) throw new CheckpointCorruptError(where, error.message);
		if (error instanceof ModelError) throw new AdapterMismatchError(`${where}: ${error.message}`);
		throw error;
	}
	if (expect.lora && !sameLora(lora, expect.lora))
		throw new AdapterMismatchError(
			`${where} holds a LoRA with ${describeLora(lora)}; this run uses ${describeLora(expect.lora)}. ` +
				'Register with the same lora settings, or start a new run under another name.'
		);

	const stateBytes = files.get(TRAINER_STATE_FILE);
	const state = stateBytes ? parseJson(stateBytes, TRAINER_STATE_FILE, where) : undefined;
	if (state && (state.format !== CHECKPOINT_FORMAT || state.version !== CHECKPOINT_VERSION))
		throw new CheckpointCorruptError(
			where,
			`${TRAINER_STATE_FILE} is not a ${CHECKPOINT_FORMAT} v${CHECKPOINT_VERSION} file ` +
				`(format ${JSON.stringify(state.format)}, version ${JSON.stringify(state.version)})`
		);
	const want = modelFingerprint(expect.modelConfig);
	const saved = state?.model as Partial<ModelFingerprint> | null | undefined;
	if (saved) {
		const differs = (Object.keys(want) as (keyof ModelFingerprint)[]).filter(
			(k) => saved[k] !== want[k]
		);
		if (differs.length)
			throw new AdapterMismatchError(
				`${where} was trained on another base model: ` +
					differs.map((k) => `${k} ${saved[k]} there, ${want[k]} here`).join('; ') +
					'. Load it with the base model it was trained on.'
			);
	}

	let params: Map<string, Float32Array>;
	try {
		params = (
			await readPeftAdapter(expect.modelConfig, adapterConfig, memoryByteSource(weightBytes), {
				ignoreDropout: true
			})
		).params;
	} catch (error) {
		if (error instanceof LoraConfigError)
			throw new AdapterMismatchError(`${where}: ${error.message}`);
		if (error instanceof ModelError)
			throw new CheckpointCorruptError(where, `${ADAPTER_WEIGHTS_FILE}: ${error.message}`);
		throw error;
	}
	const optimizerBytes = files.get(OPTIMIZER_FILE);
	const optimizer = optimizerBytes ? await readOptimizer(optimizerBytes, params, where) : undefined;
	const step = state?.step ?? 0;
	if (!(Number.isSafeInteger(step) && (step as number) >= 0))
		throw new CheckpointCorruptError(
			where,
			`${TRAINER_STATE_FILE}: step ${JSON.stringify(step)} is not an integer >= 0`
		);
	const updates = state?.adam_updates;
	if (updates !== undefined && !(Number.isSafeInteger(updates) && (updates as number) >= 0))
		throw new CheckpointCorruptError(
			where,
			`${TRAINER_STATE_FILE}: adam_updates ${JSON.stringify(updates)} is not an integer >= 0`
		);
	return {
		// Without the optimizer's moments, resuming AdamW at step n would be wrong: start at 0.
		step: optimizer ? (step as number) : 0,
		...(optimizer && updates !== undefined ? { updates: updates as number } : {}),
		lora,
		baseModel: String(state?.base_model ?? adapterConfig.base_model_name_or_path ?? ''),
		fingerprint: saved ?? undefined,
		params,
		optimizer,
		metrics: (state?.metrics as Record<string, number> | undefined) ?? {},
		created: String(state?.created ?? '')
	} as TrainingCheckpoint;
}

/** Writes the checkpoint's weights and optimizer state into the adapter (all checks first). */
export function applyCheckpoint(
	lora: LoraParameters,
	optimizer: LoraOptimizer,
	c: TrainingCheckpoint
): void {
	if (!sameLora(lora.config, c.lora))
		throw new AdapterMismatchError(
			`the checkpoint holds a LoRA with ${describeLora(c.lora)}; the model's has ${describeLora(lora.config)}.`
		);
	lora.write(c.params);
	if (c.optimizer) lora.writeState(c.optimizer.m, c.optimizer.v);
	else lora.writeState(zerosLike(c.params), zerosLike(c.params));
	optimizer.restoreStep(c.step, c.updates ?? c.step);
}

function zerosLike(params: Map<string, Float32Array>): Map<string, Float32Array> {
	return new Map([...params].map(([k, v]) => [k, new Float32Array(v.length)]));
}
