/**
 * @file decodeTrainingCheckpoint on broken and foreign inputs: every way a checkpoint folder
 * can be wrong ends in a typed error ('checkpoint-corrupt', or 'adapter-mismatch' for
 * another model, rank or targets) naming the problem, never a half-read state. No GPU; a
 * tiny Llama config, r 4 on q and v. Baseline cases show the intact files decode exactly.
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../../../../src/lib/util/random';
import {
	decodeTrainingCheckpoint,
	encodeTrainingCheckpoint,
	modelFingerprint,
	OPTIMIZER_FILE,
	TRAINER_STATE_FILE,
	type CheckpointFiles,
	type TrainingCheckpoint
} from '../../../../src/lib/grpo/store/checkpoint';
import { AdapterMismatchError, CheckpointCorruptError } from '../../../../src/lib/grpo/errors';
import {
	peftName,
	resolveLoraConfig,
	type LoraConfig
} from '../../../../src/lib/model/transformer/lora';
import {
	ADAPTER_CONFIG_FILE,
	ADAPTER_WEIGHTS_FILE
} from '../../../../src/lib/model/hf/peft-adapter';
import {
	encodeSafetensors,
	roundToDType,
	type TensorToWrite
} from '../../../../src/lib/model/hf/safetensors-writer';
import type { ModelConfig } from '../../../../src/lib/model/types';
import { projectionShape } from '../../../../src/lib/model/hf/weight-spec';
import { TINY } from '../../model/tiny-models';

const config = TINY.llama;
const lora = resolveLoraConfig({ rank: 4, alpha: 8, targetModules: ['q_proj', 'v_proj'] });

/** A [r, in] and B [out, r] of every targeted module of `model`, random. */
function randomParams(model: ModelConfig, l: LoraConfig, seed: number) {
	const rng = new Rng(seed);
	const params = new Map<string, Float32Array>();
	for (let layer = 0; layer < model.numLayers; layer++)
		for (const m of l.targetModules) {
			const [out, inF] = projectionShape(model, m);
			params.set(peftName(layer, m, 'A'), rng.normals(l.rank * inF, 0.1));
			params.set(peftName(layer, m, 'B'), rng.normals(out * l.rank, 0.1));
		}
	return params;
}

function checkpoint(
	over: Partial<TrainingCheckpoint> = {},
	model: ModelConfig = config
): TrainingCheckpoint {
	const params = randomParams(model, over.lora ?? lora, 1);
	const moments = (seed: number) =>
		new Map([...params].map(([k, v]) => [k, new Rng(seed).normals(v.length, 0.01)]));
	return {
		step: 3,
		lora,
		baseModel: 'tiny-llama',
		fingerprint: modelFingerprint(model),
		params,
		optimizer: { m: moments(2), v: moments(3) },
		metrics: { 'val/reward': 0.5 },
		created: '2025-01-01T00:00:00.000Z',
		...over
	};
}

const text = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));
const json = (files: CheckpointFiles, name: string) =>
	JSON.parse(new TextDecoder().decode(files.get(name)!)) as Record<string, unknown>;

/** The checkpoint's files with `name` replaced by `bytes` (undefined: removed). */
function withFile(files: CheckpointFiles, name: string, bytes: Uint8Array | undefined) {
	const out = new Map(files);
	if (bytes === undefined) out.delete(name);
	else out.set(name, bytes);
	return out;
}

/** A safetensors file of the checkpoint's adapter tensors, edited by `edit`. */
function adapterFile(
	params: Map<string, Float32Array>,
	edit: (tensors: TensorToWrite[]) => TensorToWrite[] = (t) => t,
	dtype: TensorToWrite['dtype'] = 'F32'
): Uint8Array {
	const tensors = [...params].map(([name, data]) => ({
		name,
		dtype,
		shape: name.endsWith('lora_A.weight')
			? [lora.rank, data.length / lora.rank]
			: [data.length / lora.rank, lora.rank],
		data
	}));
	return encodeSafetensors(edit(tensors));
}

async function expectFailure(
	files: ReadonlyMap<string, Uint8Array>,
	kind: 'checkpoint-corrupt' | 'adapter-mismatch',
	fragments: (string | RegExp)[],
	expect_: { modelConfig?: ModelConfig; lora?: LoraConfig } = {}
) {
	const error = await decodeTrainingCheckpoint(files, {
		modelConfig: expect_.modelConfig ?? config,
		lora: expect_.lora,
		where: 'checkpoints/0003'
	}).then(
		() => undefined,
		(e: unknown) => e
	);
	expect(error, `decoding should fail with ${kind}`).toBeInstanceOf(
		kind === 'checkpoint-corrupt' ? CheckpointCorruptError : AdapterMismatchError
	);
	const e = error as CheckpointCorruptError | AdapterMismatchError;
	expect(e.kind).toBe(kind);
	expect(e.message).toContain('checkpoints/0003');
	for (const f of fragments) expect(e.message).toMatch(f);
	return e;
}

describe('decodeTrainingCheckpoint: intact files (the baseline)', () => {
	it('decodes what encode wrote, exactly', async () => {
		const saved = checkpoint();
		const back = await decodeTrainingCheckpoint(encodeTrainingCheckpoint(saved), {
			modelConfig: config,
			lora
		});
		expect(back.step).toBe(3);
		expect(back.lora).toEqual(lora);
		expect(back.fingerprint).toEqual(modelFingerprint(config));
		expect(back.metrics).toEqual({ 'val/reward': 0.5 });
		expect([...back.params.keys()].sort()).toEqual([...saved.params.keys()].sort());
		for (const [name, v] of saved.params) {
			expect(back.params.get(name)).toEqual(v);
			expect(back.optimizer!.m.get(name)).toEqual(saved.optimizer!.m.get(name));
			expect(back.optimizer!.v.get(name)).toEqual(saved.optimizer!.v.get(name));
		}
	});

	it("keeps AdamW's update count when several updates made a step, absent otherwise", async () => {
		const files = encodeTrainingCheckpoint({ ...checkpoint(), updates: 12 });
		expect(json(files, TRAINER_STATE_FILE)).toMatchObject({ step: 3, adam_updates: 12 });
		const back = await decodeTrainingCheckpoint(files, { modelConfig: config, lora });
		expect([back.step, back.updates]).toEqual([3, 12]);
		const plain = encodeTrainingCheckpoint(checkpoint());
		expect(json(plain, TRAINER_STATE_FILE)).not.toHaveProperty('adam_updates');
		const one = await decodeTrainingCheckpoint(plain, { modelConfig: config, lora });
		expect(one.updates).toBeUndefined();
	});

	it('reads the two PEFT files alone as weights-only at step 0', async () => {
		const files = encodeTrainingCheckpoint(checkpoint());
		const peftOnly = new Map(
			[ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE].map((n) => [n, files.get(n)!])
		);
		const back = await decodeTrainingCheckpoint(peftOnly, { modelConfig: config });
		expect(back.step).toBe(0);
		expect(back.optimizer).toBeUndefined();
		expect(back.fingerprint).toBeUndefined();
		expect(back.baseModel).toBe('tiny-llama');
	});

	it('restarts AdamW at step 0 when the optimizer file is gone, whatever the state says', async () => {
		const files = withFile(encodeTrainingCheckpoint(checkpoint()), OPTIMIZER_FILE, undefined);
		const back = await decodeTrainingCheckpoint(files, { modelConfig: config });
		expect(json(files, TRAINER_STATE_FILE).step).toBe(3);
		expect(back.step).toBe(0);
		expect(back.optimizer).toBeUndefined();
	});

	it('widens an F16 adapter (peft saved from a half-precision model) to its f32 values', async () => {
		const saved = checkpoint();
		const files = withFile(
			encodeTrainingCheckpoint(saved),
			ADAPTER_WEIGHTS_FILE,
			adapterFile(saved.params, (t) => t, 'F16')
		);
		const back = await decodeTrainingCheckpoint(withFile(files, OPTIMIZER_FILE, undefined), {
			modelConfig: config
		});
		for (const [name, v] of saved.params)
			expect(back.params.get(name)).toEqual(roundToDType(v, 'F16'));
	});
});

describe('decodeTrainingCheckpoint: damaged files are checkpoint-corrupt', () => {
	const saved = checkpoint();
	const files = encodeTrainingCheckpoint(saved);

	it('a missing adapter file, naming the files that are there', async () => {
		await expectFailure(withFile(files, ADAPTER_WEIGHTS_FILE, undefined), 'checkpoint-corrupt', [
			ADAPTER_WEIGHTS_FILE,
			/it has adapter_config\.json, optimizer\.safetensors, trainer_state\.json/
		]);
		await expectFailure(new Map(), 'checkpoint-corrupt', ['no files']);
	});

	it('adapter_config.json that is not JSON, or not an object', async () => {
		await expectFailure(
			withFile(files, ADAPTER_CONFIG_FILE, new TextEncoder().encode('{"r": 4,')),
			'checkpoint-corrupt',
			[`${ADAPTER_CONFIG_FILE} is not valid JSON`]
		);
		await expectFailure(withFile(files, ADAPTER_CONFIG_FILE, text([4])), 'checkpoint-corrupt', [
			`${ADAPTER_CONFIG_FILE} is not a JSON object`
		]);
	});

	it('adapter_config.json with a field of the wrong type (r not a number)', async () => {
		const config = json(files, ADAPTER_CONFIG_FILE);
		await expectFailure(
			withFile(files, ADAPTER_CONFIG_FILE, text({ ...config, r: 'four' })),
			'checkpoint-corrupt',
			['r', 'must be a number', '"four"']
		);
	});

	it('trainer_state.json: not JSON, another format or version, a bad step', async () => {
		const state = json(files, TRAINER_STATE_FILE);
		await expectFailure(
			withFile(files, TRAINER_STATE_FILE, new TextEncoder().encode('{"step": 3')),
			'checkpoint-corrupt',
			[`${TRAINER_STATE_FILE} is not valid JSON`]
		);
		await expectFailure(
			withFile(files, TRAINER_STATE_FILE, text({ ...state, format: 'hf-trainer' })),
			'checkpoint-corrupt',
			['"hf-trainer"']
		);
		await expectFailure(
			withFile(files, TRAINER_STATE_FILE, text({ ...state, version: 2 })),
			'checkpoint-corrupt',
			['version 2']
		);
		for (const step of [-1, 2.5, '3'])
			await expectFailure(
				withFile(files, TRAINER_STATE_FILE, text({ ...state, step })),
				'checkpoint-corrupt',
				[`step ${JSON.stringify(step)} is not an integer >= 0`]
			);
		await expectFailure(
			withFile(files, TRAINER_STATE_FILE, text({ ...state, adam_updates: -2 })),
			'checkpoint-corrupt',
			['adam_updates -2 is not an integer >= 0']
		);
	});

	it('adapter_model.safetensors truncated, or its header garbage', async () => {
		const whole = files.get(ADAPTER_WEIGHTS_FILE)!;
		await expectFailure(
			withFile(files, ADAPTER_WEIGHTS_FILE, whole.subarray(0, whole.length - 16)),
			'checkpoint-corrupt',
			[ADAPTER_WEIGHTS_FILE, 'truncated']
		);
		const garbage = new Uint8Array(64).fill(0x7b);
		await expectFailure(withFile(files, ADAPTER_WEIGHTS_FILE, garbage), 'checkpoint-corrupt', [
			ADAPTER_WEIGHTS_FILE,
			'not a safetensors file'
		]);
	});

	it('a NaN or an infinity in a weight', async () => {
		for (const bad of [NaN, Infinity]) {
			const name = peftName(1, 'v_proj', 'B');
			const params = new Map(saved.params);
			const poisoned = params.get(name)!.slice();
			poisoned[5] = bad;
			params.set(name, poisoned);
			await expectFailure(
				withFile(files, ADAPTER_WEIGHTS_FILE, adapterFile(params)),
				'checkpoint-corrupt',
				[name, 'NaN or infinite']
			);
		}
	});

	it('optimizer.safetensors: a moment missing, misshapen, an extra tensor, garbage', async () => {
		const name = peftName(0, 'q_proj', 'A');
		const moments = (edit: (t: TensorToWrite[]) => TensorToWrite[]) => {
			const tensors: TensorToWrite[] = [...saved.params].flatMap(([n, p]) => [
				{ name: `${n}.exp_avg`, dtype: 'F32' as const, shape: [p.length], data: p },
				{ name: `${n}.exp_avg_sq`, dtype: 'F32' as const, shape: [p.length], data: p }
			]);
			return encodeSafetensors(edit(tensors));
		};
		await expectFailure(
			withFile(
				files,
				OPTIMIZER_FILE,
				moments((t) => t.filter((x) => x.name !== `${name}.exp_avg_sq`))
			),
			'checkpoint-corrupt',
			[`${OPTIMIZER_FILE} has no ${name}.exp_avg_sq`]
		);
		await expectFailure(
			withFile(
				files,
				OPTIMIZER_FILE,
				moments((t) =>
					t.map((x) =>
						x.name === `${name}.exp_avg` ? { ...x, shape: [3], data: new Float32Array(3) } : x
					)
				)
			),
			'checkpoint-corrupt',
			[`${name}.exp_avg has 3 values`]
		);
		await expectFailure(
			withFile(
				files,
				OPTIMIZER_FILE,
				moments((t) => [...t, { name: 'step', dtype: 'F32', shape: [1], data: [3] }])
			),
			'checkpoint-corrupt',
			[/holds \d+ tensors; the adapter needs \d+/]
		);
		await expectFailure(
			withFile(files, OPTIMIZER_FILE, new Uint8Array([1, 2, 3])),
			'checkpoint-corrupt',
			[OPTIMIZER_FILE]
		);
	});
});

describe('decodeTrainingCheckpoint: foreign adapters are adapter-mismatch', () => {
	const files = encodeTrainingCheckpoint(checkpoint());

	it('a checkpoint of another base model names each differing dimension', async () => {
		const e = await expectFailure(files, 'adapter-mismatch', ['another base model'], {
			modelConfig: { ...config, numLayers: 3, vocabSize: 320 }
		});
		expect(e.message).toContain('numLayers 2 there, 3 here');
		expect(e.message).toContain('vocabSize 300 there, 320 here');
		expect(e.message).not.toContain('hiddenSize');
	});

	it("a run's expected rank, alpha or targets that differ from the checkpoint's", async () => {
		for (const other of [
			resolveLoraConfig({ ...lora, rank: 8 }),
			resolveLoraConfig({ ...lora, alpha: 16 }),
			resolveLoraConfig({ ...lora, targetModules: ['q_proj', 'k_proj', 'v_proj'] })
		])
			await expectFailure(files, 'adapter-mismatch', ['r=4, alpha=8, targets q_proj,v_proj'], {
				lora: other
			});
	});

	it('a PEFT-only adapter for a model of other shapes (no trainer state to say so)', async () => {
		const wide: ModelConfig = { ...config, hiddenSize: 48, headDim: 12, intermediateSize: 96 };
		const theirs = encodeTrainingCheckpoint(checkpoint({ fingerprint: undefined }, wide));
		const peftOnly = withFile(
			withFile(theirs, TRAINER_STATE_FILE, undefined),
			OPTIMIZER_FILE,
			undefined
		);
		await expectFailure(peftOnly, 'adapter-mismatch', ['wrong shape', 'q_proj']);
	});

	it('tensors missing for a target, or present for a module not targeted', async () => {
		const params = checkpoint().params;
		const dropped = peftName(1, 'q_proj', 'B');
		await expectFailure(
			withFile(
				files,
				ADAPTER_WEIGHTS_FILE,
				adapterFile(params, (t) => t.filter((x) => x.name !== dropped))
			),
			'adapter-mismatch',
			['missing 1', dropped]
		);
		const kA = peftName(0, 'k_proj', 'A');
		await expectFailure(
			withFile(
				files,
				ADAPTER_WEIGHTS_FILE,
				adapterFile(params, (t) => [
					...t,
					{ name: kA, dtype: 'F32', shape: [4, 32], data: new Float32Array(128) }
				])
			),
			'adapter-mismatch',
			['unexpected 1', kA]
		);
	});

	it('a LoRA variant TabRL cannot represent (rsLoRA, DoRA, trained biases)', async () => {
		const cfg = json(files, ADAPTER_CONFIG_FILE);
		for (const [field, value] of [
			['use_rslora', true],
			['use_dora', true],
			['bias', 'lora_only']
		] as const)
			await expectFailure(
				withFile(files, ADAPTER_CONFIG_FILE, text({ ...cfg, [field]: value })),
				'adapter-mismatch',
				[field]
			);
	});
});
