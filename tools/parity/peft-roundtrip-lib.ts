/**
 * @file The TabRL half of the PEFT round trip (peft-roundtrip.ts the entry, peft_roundtrip.py
 * the PyTorch half) over one DIR: plan.json, per case model/, run/checkpoints/0001/ (one AdamW
 * step, saved as a run saves), tabrl-logprobs.json, peft/<name>/ adapters and their logprobs,
 * python-report.json. Logprobs are log p(ids[t + 1] | ids[<= t]); tolerance 1e-4 max abs,
 * and an adapter must move some logprob by 100x that.
 */
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Gpu } from '../../src/lib/gpu/device';
import { Rng } from '../../src/lib/util/random';
import {
	applyCheckpoint,
	captureCheckpoint,
	decodeTrainingCheckpoint,
	encodeTrainingCheckpoint
} from '../../src/lib/grpo/store/checkpoint';
import { NodeRunStore } from '../../src/lib/grpo/store/node/run-store';
import { LoraOptimizer } from '../../src/lib/grpo/optimizer';
import { checkpointName } from '../../src/lib/grpo/store/run-store';
import { makeFixture, type FixtureName } from '../../src/lib/testing/fixtures';
import type { LoraConfig } from '../../src/lib/model/transformer/lora';
import {
	openCheckpointFromDirectory,
	writeModelFiles
} from '../../src/lib/model/hf/node/checkpoint';
import { TransformerModel } from '../../src/lib/model/transformer/transformer';
import type { ProjectionName } from '../../src/lib/model/hf/weight-spec';

/** Max |TabRL - peft| over every logprob (f32 on the GPU against f64). */
export const TOLERANCE = 1e-4;
/** An adapter must move some logprob by at least this much (else the check proves nothing). */
export const MIN_ADAPTER_EFFECT = 100 * TOLERANCE;
/** AdamW's rate for the one step TabRL takes before saving (large, so the step shows). */
const LR = 1e-2;

export interface RoundTripCase {
	name: string;
	fixture: FixtureName;
	numLayers: number;
	seed: number;
	/** The adapter TabRL trains and exports. */
	lora: { rank: number; alpha: number; targets: ProjectionName[] };
	/** Token ids scored on both sides. */
	sequences: number[][];
}

/** An adapter peft makes per case (peft_roundtrip.py builds its LoraConfig from this). */
export interface PeftAdapterSpec {
	name: string;
	r: number;
	lora_alpha: number;
	lora_dropout: number;
	/** A list, or peft's 'all-linear' (saved as the list it resolves to). */
	target_modules: string[] | 'all-linear';
}

export interface Plan {
	tolerance: number;
	minAdapterEffect: number;
	cases: RoundTripCase[];
	/** Made by peft on every case's model, then imported by TabRL. */
	peftAdapters: PeftAdapterSpec[];
}

/** A subset with alpha / r = 1.5, and peft's 'all-linear' with dropout (read as 0). */
export const PEFT_ADAPTERS: PeftAdapterSpec[] = [
	{
		name: 'r6-q-v-down',
		r: 6,
		lora_alpha: 9,
		lora_dropout: 0,
		target_modules: ['q_proj', 'v_proj', 'down_proj']
	},
	{ name: 'r4-all-linear', r: 4, lora_alpha: 16, lora_dropout: 0.05, target_modules: 'all-linear' }
];

/** Per sequence: n - 1 logprobs (null: not finite). */
export type SequenceLogprobs = (number | null)[][];

export interface PythonReport {
	versions?: Record<string, string>;
	/** peft's verdict per case on TabRL's checkpoint. */
	tabrlToPeft: Record<string, unknown>[];
	/** The adapters peft saved, for `import`. */
	peftAdapters: {
		case: string;
		name: string;
		/** Folder relative to DIR. */
		dir: string;
		/** What peft was told (r, lora_alpha, target_modules as resolved). */
		r: number;
		lora_alpha: number;
		target_modules: string[];
		/** peft's logprobs (f64) with the adapter, and of the base model. */
		logprobs: SequenceLogprobs;
		base_logprobs: SequenceLogprobs;
	}[];
	/** Adapters peft could not make (counted as failures by `import`). */
	peftErrors?: { case: string; name: string; error: string }[];
	pass?: boolean;
	error?: string;
}

export const caseDir = (root: string, c: { name: string }) => join(root, c.name);
export const modelDir = (root: string, c: { name: string }) => join(root, c.name, 'model');
export const runDir = (root: string, c: { name: string }) => join(root, c.name, 'run');
export const TRAINED_STEP = 1;

/** Random ids with the given lengths (fixed seed). */
function sequences(vocab: number, lengths: number[], seed: number): number[][] {
	const rng = new Rng(seed);
	return lengths.map((n) => Array.from(rng.ints(n, vocab)));
}

/** The cases: a Llama (tied, llama3 RoPE, all seven projections) and a Qwen3 (sharded, head
 * dim != hidden / heads, attention only, alpha / r = 3). `tiny`: short sequences, for
 * SwiftShader. */
export function makePlan(options: { tiny: boolean; numLayers?: number }): Plan {
	const lengths = options.tiny ? [9, 5, 2] : [64, 41, 17, 2];
	const numLayers = options.numLayers ?? 2;
	const specs: Omit<RoundTripCase, 'sequences'>[] = [
		{
			name: 'llama',
			fixture: 'llama',
			numLayers,
			seed: 11,
			lora: {
				rank: 8,
				alpha: 16,
				targets: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj']
			}
		},
		{
			name: 'qwen3',
			fixture: 'qwen3',
			numLayers,
			seed: 12,
			lora: { rank: 4, alpha: 12, targets: ['q_proj', 'k_proj', 'v_proj', 'o_proj'] }
		}
	];
	return {
		tolerance: TOLERANCE,
		minAdapterEffect: MIN_ADAPTER_EFFECT,
		peftAdapters: PEFT_ADAPTERS,
		cases: specs.map((s) => {
			const vocab = makeFixture(s.fixture, { seed: s.seed, numLayers: s.numLayers }).config
				.vocabSize;
			return { ...s, sequences: sequences(vocab, lengths, s.seed + 1) };
		})
	};
}

/** [B, T - 1] logprobs (NaN past the end) -> per sequence lists of n - 1 values. */
export function perSequence(
	logprobs: ArrayLike<number>,
	seqs: readonly (readonly number[])[],
	T: number
): SequenceLogprobs {
	return seqs.map((s, b) =>
		Array.from({ length: s.length - 1 }, (_, t) => {
			const v = logprobs[b * (T - 1) + t];
			return Number.isFinite(v) ? v : null;
		})
	);
}

export interface LogprobComparison {
	maxAbs: number;
	count: number;
	/** Positions null / non-finite on either side (must be 0). */
	missing: number;
}

export function compare(ours: SequenceLogprobs, theirs: SequenceLogprobs): LogprobComparison {
	const out: LogprobComparison = { maxAbs: 0, count: 0, missing: 0 };
	if (ours.length !== theirs.length)
		throw new Error(`${ours.length} sequences here, ${theirs.length} there`);
	ours.forEach((row, b) => {
		if (row.length !== theirs[b].length)
			throw new Error(`sequence ${b}: ${row.length} logprobs here, ${theirs[b].length} there`);
		row.forEach((a, t) => {
			const e = theirs[b][t];
			if (a === null || e === null || !Number.isFinite(a) || !Number.isFinite(e)) {
				out.missing++;
				return;
			}
			out.maxAbs = Math.max(out.maxAbs, Math.abs(a - e));
			out.count++;
		});
	});
	return out;
}

export const within = (c: LogprobComparison) =>
	c.maxAbs <= TOLERANCE && c.missing === 0 && c.count > 0;

const loraConfigOf = (l: RoundTripCase['lora']): Partial<LoraConfig> => ({
	rank: l.rank,
	alpha: l.alpha,
	targetModules: l.targets
});

async function readFolder(dir: string): Promise<Map<string, Uint8Array>> {
	const files = new Map<string, Uint8Array>();
	for (const name of await readdir(dir))
		files.set(name, new Uint8Array(await readFile(join(dir, name))));
	return files;
}

/** Same tensor names, and every value the same bit for bit (Object.is: NaN, -0). */
export function sameValues(
	a: ReadonlyMap<string, Float32Array>,
	b: ReadonlyMap<string, Float32Array>
): boolean {
	if (a.size !== b.size) return false;
	for (const [name, x] of a) {
		const y = b.get(name);
		if (!y || y.length !== x.length || x.some((v, i) => !Object.is(v, y[i]))) return false;
	}
	return true;
}

/**
 * One case of `export`: write the model folder, make a random non-zero LoRA (A from TabRL's
 * init, B ~ N(0, 0.1^2)), take one AdamW step (dLoss/dlogprobs random) so the checkpoint
 * holds a trained adapter and real optimizer moments, save it with NodeRunStore, score the
 * sequences with and without it, and read the saved files back (they must decode to the
 * same values exactly).
 */
export async function exportCase(gpu: Gpu, root: string, c: RoundTripCase) {
	const fixture = makeFixture(c.fixture, { seed: c.seed, numLayers: c.numLayers });
	await writeModelFiles(modelDir(root, c), fixture.files);
	const checkpoint = await openCheckpointFromDirectory(modelDir(root, c));
	const { config } = checkpoint;
	const model = await TransformerModel.create(gpu, config, checkpoint.weights, {
		lora: loraConfigOf(c.lora),
		seed: c.seed
	});
	const optimizer = new LoraOptimizer(gpu, model.lora!, { lr: LR });
	try {
		const rng = new Rng(c.seed + 2);
		const params = await model.lora!.read();
		for (const [name, v] of params)
			if (name.endsWith('lora_B.weight')) params.set(name, rng.normals(v.length, 0.1));
		model.lora!.write(params);
		const T = Math.max(...c.sequences.map((s) => s.length));
		await model.forwardBackward(c.sequences, rng.normals(c.sequences.length * (T - 1), 1));
		const step = await optimizer.apply();
		if (step.step !== TRAINED_STEP)
			throw new Error(`the AdamW step was skipped: ${JSON.stringify(step)}`);

		const base = await model.scoreTokens(c.sequences, { lora: false });
		const lora = await model.scoreTokens(c.sequences);
		const saved = await captureCheckpoint(model.lora!, optimizer, {
			baseModel: modelDir(root, c),
			modelConfig: config,
			metrics: { 'roundtrip/grad_norm': step.gradNorm }
		});
		const store = new NodeRunStore(runDir(root, c));
		await store.saveCheckpoint(saved.step, encodeTrainingCheckpoint(saved));
		const back = await decodeTrainingCheckpoint(await store.loadCheckpoint(saved.step), {
			modelConfig: config,
			lora: model.lora!.config,
			where: `${c.name}/run/checkpoints/${checkpointName(saved.step)}`
		});
		const readBackExact =
			back.step === saved.step &&
			sameValues(back.params, saved.params) &&
			!!back.optimizer &&
			sameValues(back.optimizer.m, saved.optimizer!.m) &&
			sameValues(back.optimizer.v, saved.optimizer!.v);

		await writeFile(
			join(caseDir(root, c), 'tabrl-logprobs.json'),
			JSON.stringify({
				checkpoint: `${c.name}/run/checkpoints/${checkpointName(saved.step)}`,
				base: perSequence(base.logprobs, c.sequences, base.T),
				lora: perSequence(lora.logprobs, c.sequences, lora.T)
			})
		);
		return {
			name: c.name,
			architecture: config.architecture,
			lora: c.lora,
			step: saved.step,
			gradNorm: step.gradNorm,
			files: [...(await store.loadCheckpoint(saved.step)).keys()].sort(),
			readBackExact
		};
	} finally {
		optimizer.release();
		model.release();
	}
}

/** peft's target list as module kinds, sorted: 'all-linear' is saved as full module paths
 * (model.layers.0.mlp.down_proj), which name the kind by their last component. */
function moduleKinds(targets: string[]): string[] {
	return [...new Set(targets.map((m) => m.split('.').at(-1)!))].sort();
}

/**
 * One adapter of `import`: peft's folder read as a weights-only checkpoint (all its files,
 * README.md included, as a user would hand it over), applied to a fresh TabRL model,
 * scored, compared with peft; then captured and encoded again as a TabRL checkpoint, which
 * must decode to the same weights exactly (a peft adapter can seed a TabRL run).
 */
export async function importAdapter(
	gpu: Gpu,
	root: string,
	c: RoundTripCase,
	a: PythonReport['peftAdapters'][number]
) {
	const checkpoint = await openCheckpointFromDirectory(modelDir(root, c));
	const { config } = checkpoint;
	const decoded = await decodeTrainingCheckpoint(await readFolder(join(root, a.dir)), {
		modelConfig: config,
		where: a.dir
	});
	const configAsPeftSaid =
		decoded.lora.rank === a.r &&
		decoded.lora.alpha === a.lora_alpha &&
		[...decoded.lora.targetModules].sort().join() === moduleKinds(a.target_modules).join();
	const model = await TransformerModel.create(gpu, config, checkpoint.weights, {
		lora: decoded.lora
	});
	const optimizer = new LoraOptimizer(gpu, model.lora!);
	try {
		applyCheckpoint(model.lora!, optimizer, decoded);
		const base = await model.scoreTokens(c.sequences, { lora: false });
		const lora = await model.scoreTokens(c.sequences);
		const ours = perSequence(lora.logprobs, c.sequences, lora.T);
		const oursBase = perSequence(base.logprobs, c.sequences, base.T);
		const again = await decodeTrainingCheckpoint(
			encodeTrainingCheckpoint(
				await captureCheckpoint(model.lora!, optimizer, {
					baseModel: modelDir(root, c),
					modelConfig: config
				})
			),
			{ modelConfig: config, lora: decoded.lora }
		);
		const result = {
			case: c.name,
			name: a.name,
			lora: {
				rank: decoded.lora.rank,
				alpha: decoded.lora.alpha,
				targets: decoded.lora.targetModules
			},
			configAsPeftSaid,
			weightsOnly: decoded.step === 0 && decoded.optimizer === undefined,
			lora_vs_peft: compare(ours, a.logprobs),
			base_vs_peft: compare(oursBase, a.base_logprobs),
			adapterEffect: compare(ours, oursBase).maxAbs,
			reexportExact: sameValues(again.params, decoded.params)
		};
		return {
			...result,
			pass:
				result.configAsPeftSaid &&
				result.weightsOnly &&
				within(result.lora_vs_peft) &&
				within(result.base_vs_peft) &&
				result.adapterEffect >= MIN_ADAPTER_EFFECT &&
				result.reexportExact
		};
	} finally {
		optimizer.release();
		model.release();
	}
}

export async function writePlan(root: string, plan: Plan): Promise<void> {
	await mkdir(root, { recursive: true });
	await writeFile(join(root, 'plan.json'), JSON.stringify(plan, null, 1) + '\n');
}

export async function readJson<T>(path: string): Promise<T> {
	return JSON.parse(await readFile(path, 'utf8')) as T;
}
