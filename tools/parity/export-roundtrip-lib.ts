/**
 * @file The TabRL half of the export round trip (export-roundtrip.ts is the entry,
 * export_roundtrip.py the PyTorch half): a run exported from the page as its zip, its adapter
 * loaded by peft onto the base, and the run merged by `cli export --merge`, all scoring the
 * logprobs TabRL scores. One folder DIR that both sides read and write:
 *
 *   DIR/plan.json                     cases, sequences, tolerances, every path below
 *   DIR/<case>/tabrl-parity/<case>-base/   the base: a random model folder in Hugging Face
 *                                     layout, where the adapter's portable base name
 *                                     (base_model_name_or_path "tabrl-parity/<case>-base")
 *                                     resolves from DIR/<case> as a local path
 *   DIR/<case>/run/                   the live run (NodeRunStore): two real steps (SFT, then
 *                                     GRPO) from a fresh LoRA (B = 0), saved as a run saves
 *   DIR/<case>/run.zip                the page's Export: packRunArchive(readRunContents(store))
 *   DIR/<case>/export/<run>/          run.zip unzipped (fflate); its latest checkpoint folder
 *                                     is the adapter peft loads, as the user would hand it over
 *   DIR/<case>/merged/                `cli export --merge --base` (runExport) of that run
 *   DIR/<case>/adapter-given-base/    (Python) a copy of the adapter naming the base's folder
 *   DIR/<case>/tabrl-logprobs.json    TabRL's logprobs: base (LoRA off), lora (the trained
 *                                     run's model), merged (the merged folder, no LoRA)
 *   DIR/export-report.json            the Python side's verdict (export_roundtrip.py)
 *   DIR/selftest-report.json          the CPU stand-in's verdict (`selftest`, no Python)
 *
 * The run is built as the page's worker builds one (agent/backend/model-run.ts): sftStep and
 * grpoStep on a TransformerModel with LoraOptimizer, captureCheckpoint + encode, saved with its
 * history line, the base named by its location (a Hugging Face resolve URL, as the page has
 * it, so base_model_name_or_path is a Hub id). Tolerance: the PEFT round trip's (1e-4 max abs,
 * f32 on the GPU against f64); the adapter must move some logprob by 100x that.
 */
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { unzipSync } from 'fflate';
import { parseExportArgs, runExport } from '../../scripts/cli/export';
import type { Gpu } from '../../src/lib/gpu/device';
import {
	captureCheckpoint,
	decodeTrainingCheckpoint,
	encodeTrainingCheckpoint
} from '../../src/lib/grpo/store/checkpoint';
import { NodeRunStore } from '../../src/lib/grpo/store/node/run-store';
import { LoraOptimizer } from '../../src/lib/grpo/optimizer';
import {
	packRunArchive,
	readRunContents,
	unpackRunArchive
} from '../../src/lib/grpo/store/run-archive';
import { checkpointName } from '../../src/lib/grpo/store/run-store';
import { grpoStep, sftStep } from '../../src/lib/grpo/train-step';
import type { TrainSequence } from '../../src/lib/grpo/pack';
import { toTokenBatch } from '../../src/lib/model/transformer/batch';
import { memoryByteSource } from '../../src/lib/model/hf/byte-source';
import { peftName } from '../../src/lib/model/transformer/lora';
import {
	openCheckpointFromDirectory,
	writeModelFiles
} from '../../src/lib/model/hf/node/checkpoint';
import {
	ADAPTER_CONFIG_FILE,
	ADAPTER_WEIGHTS_FILE,
	readPeftAdapter
} from '../../src/lib/model/hf/peft-adapter';
import { encodeSafetensors } from '../../src/lib/model/hf/safetensors-writer';
import { TransformerModel } from '../../src/lib/model/transformer/transformer';
import {
	PROJECTIONS,
	projectionPath,
	projectionShape,
	weightSpecs,
	type ProjectionName
} from '../../src/lib/model/hf/weight-spec';
import { preset } from '../../src/lib/run';
import { makeFixture, type Fixture, type FixtureName } from '../../src/lib/testing/fixtures';
import { referenceLogprobs } from '../../src/lib/testing/reference';
import { Rng } from '../../src/lib/util/random';
import {
	compare,
	MIN_ADAPTER_EFFECT,
	perSequence,
	readJson,
	TOLERANCE,
	within,
	type LogprobComparison,
	type SequenceLogprobs
} from './peft-roundtrip-lib';

export { TOLERANCE, MIN_ADAPTER_EFFECT };
/** Merged weight against W + (alpha / r) B A in f64: relative, plus an absolute floor for
 * entries near 0 (f32 arithmetic over a rank <= 8 sum: ~1e-7 relative). */
export const MERGE_RTOL = 1e-5;
export const MERGE_ATOL = 1e-6;
/** AdamW's rate (large, so two steps from B = 0 move the logprobs well past the tolerance). */
const LR = 1e-2;
/** The steps the run takes: 1 SFT, 2 GRPO; the export and the merge use the latest. */
export const TRAINED_STEP = 2;
/** Where the page would have loaded the base from: its portable name is `${HUB_OWNER}/<case>-base`. */
const HUB_OWNER = 'tabrl-parity';

export interface ExportCase {
	name: string;
	fixture: FixtureName;
	numLayers: number;
	seed: number;
	/** The recipe's LoRA (the run adapts every projection, as the page's runs do). */
	lora: { rank: number; alpha: number; targets: ProjectionName[] };
	/** The run's training data: SFT on every token after the prompt, then one GRPO group. */
	train: { sequences: number[][]; promptTokens: number; advantages: number[] };
	/** Token ids scored on every side. */
	sequences: number[][];
	/** The Hub id the adapter names its base by, and the paths (relative to DIR). */
	baseRepoId: string;
	runName: string;
	paths: {
		base: string;
		run: string;
		zip: string;
		export: string;
		adapter: string;
		merged: string;
		logprobs: string;
	};
}

export interface ExportPlan {
	tolerance: number;
	minAdapterEffect: number;
	mergeRtol: number;
	mergeAtol: number;
	cases: ExportCase[];
}

/** Random ids with the given lengths (fixed seed). */
function sequences(vocab: number, lengths: number[], seed: number): number[][] {
	const rng = new Rng(seed);
	return lengths.map((n) => Array.from(rng.ints(n, vocab)));
}

/**
 * The fixture's files, with every weight stored as F32 (qwen2's ships F16): `cli export`
 * writes merged tensors in the base's dtype, so an F16 base would put f16 rounding (~1e-3 in
 * logprobs) between the merged folder and the adapter, above the tolerance.
 */
export function baseFixture(c: Pick<ExportCase, 'fixture' | 'seed' | 'numLayers'>): Fixture {
	const f = makeFixture(c.fixture, { seed: c.seed, numLayers: c.numLayers });
	const raw = f.rawConfig;
	if (raw.torch_dtype === 'float32' || raw.dtype === 'float32') return f;
	const shapes = new Map(weightSpecs(f.config).map((s) => [s.name, s.shape]));
	const files = new Map(f.files);
	for (const [file, names] of f.shards)
		files.set(
			file,
			encodeSafetensors(
				names.map((n) => ({
					name: n,
					dtype: 'F32',
					shape: shapes.get(n)!,
					data: f.tensors.get(n)!
				})),
				{ format: 'pt' }
			)
		);
	const rawConfig = { ...raw };
	if ('torch_dtype' in rawConfig) rawConfig.torch_dtype = 'float32';
	if ('dtype' in rawConfig) rawConfig.dtype = 'float32';
	files.set('config.json', JSON.stringify(rawConfig, null, 2) + '\n');
	return { ...f, files, rawConfig };
}

/** A Llama (tied, llama3 RoPE, r 8 alpha 16) and a Qwen2 (q/k/v biases, one kv head, r 4
 * alpha 12); `tiny`: short sequences, for SwiftShader; `only`: a subset of the cases. */
export function makeExportPlan(options: {
	tiny: boolean;
	numLayers?: number;
	only?: string[];
}): ExportPlan {
	const numLayers = options.numLayers ?? 2;
	const scored = options.tiny ? [9, 5, 2] : [64, 41, 17, 2];
	const trained = options.tiny ? [8, 6, 5] : [48, 40, 33, 24];
	const advantages = options.tiny ? [1, -1, 0.5] : [1, -1, 0.5, -0.5];
	const specs = [
		{ name: 'llama', fixture: 'llama' as const, seed: 21, rank: 8, alpha: 16 },
		{ name: 'qwen2', fixture: 'qwen2' as const, seed: 22, rank: 4, alpha: 12 }
	].filter((s) => !options.only || options.only.includes(s.name));
	return {
		tolerance: TOLERANCE,
		minAdapterEffect: MIN_ADAPTER_EFFECT,
		mergeRtol: MERGE_RTOL,
		mergeAtol: MERGE_ATOL,
		cases: specs.map((s) => {
			const vocab = makeFixture(s.fixture, { seed: s.seed, numLayers }).config.vocabSize;
			const runName = `export-${s.name}`;
			const baseRepoId = `${HUB_OWNER}/${s.name}-base`;
			const exportDir = join(s.name, 'export');
			return {
				name: s.name,
				fixture: s.fixture,
				numLayers,
				seed: s.seed,
				lora: { rank: s.rank, alpha: s.alpha, targets: [...PROJECTIONS] },
				train: {
					sequences: sequences(vocab, trained, s.seed + 3),
					promptTokens: 3,
					advantages
				},
				sequences: sequences(vocab, scored, s.seed + 1),
				baseRepoId,
				runName,
				paths: {
					base: join(s.name, baseRepoId),
					run: join(s.name, 'run'),
					zip: join(s.name, 'run.zip'),
					export: exportDir,
					adapter: join(exportDir, runName, 'checkpoints', checkpointName(TRAINED_STEP)),
					merged: join(s.name, 'merged'),
					logprobs: join(s.name, 'tabrl-logprobs.json')
				}
			};
		})
	};
}

export interface TabrlLogprobs {
	base: SequenceLogprobs;
	lora: SequenceLogprobs;
	merged: SequenceLogprobs;
}

function sameValues(a: ReadonlyMap<string, Float32Array>, b: ReadonlyMap<string, Float32Array>) {
	if (a.size !== b.size) return false;
	for (const [name, x] of a) {
		const y = b.get(name);
		if (!y || y.length !== x.length || x.some((v, i) => !Object.is(v, y[i]))) return false;
	}
	return true;
}

/** A step's metrics as the run's history line and the checkpoint's trainer_state carry them. */
function stepLine(step: number, metrics: Record<string, number>) {
	return { step, recorded_at: new Date().toISOString(), ...metrics };
}

/**
 * One case of `export` (see the file comment): base folder, a two-step run, its zip, the zip
 * unzipped, the merge, TabRL's logprobs. Returns what it did and the checks made here (the
 * exported adapter decodes to the trained weights exactly; the page's importer reads the zip).
 */
export async function exportCase(gpu: Gpu, root: string, c: ExportCase) {
	const at = (p: string) => resolve(root, p);
	const fixture = baseFixture(c);
	await writeModelFiles(at(c.paths.base), fixture.files);
	const checkpoint = await openCheckpointFromDirectory(at(c.paths.base));
	const { config } = checkpoint;
	const pageBase = `https://huggingface.co/${c.baseRepoId}/resolve/main/`;
	// run.json's recipe as the page keeps it: what matters here is its base and LoRA (the
	// steps below are driven directly, at LR); `cli export` reads the base from it.
	const recipe = {
		...preset('letters', '/'),
		baseModel: pageBase,
		lora: { rank: c.lora.rank, alpha: c.lora.alpha },
		seed: c.seed
	};
	const model = await TransformerModel.create(gpu, config, checkpoint.weights, {
		lora: { rank: c.lora.rank, alpha: c.lora.alpha, targetModules: c.lora.targets },
		seed: c.seed
	});
	const optimizer = new LoraOptimizer(gpu, model.lora!, { lr: LR });
	const store = await NodeRunStore.open(at(c.paths.run));
	const steps: Record<string, number>[] = [];
	let trained: Map<string, Float32Array>;
	let scores: Omit<TabrlLogprobs, 'merged'>;
	try {
		const save = async (metrics: Record<string, number>) => {
			const saved = await captureCheckpoint(model.lora!, optimizer, {
				baseModel: pageBase,
				modelConfig: config,
				metrics
			});
			await store.saveCheckpoint(
				saved.step,
				encodeTrainingCheckpoint(saved),
				stepLine(saved.step, metrics)
			);
			steps.push({ step: saved.step, ...metrics });
			return saved;
		};
		const { promptTokens } = c.train;
		const trainMask = (ids: number[]) => ids.map((_, i) => i >= promptTokens);
		const sft = await sftStep(
			model,
			optimizer,
			c.train.sequences.map((ids) => ({ ids, trainMask: trainMask(ids), advantage: 0 }))
		);
		if (sft.skipped) throw new Error(`the SFT step was skipped: ${sft.skipped}`);
		await save({
			'sft/loss': sft.metrics.loss,
			'sft/grad_norm': sft.metrics.gradNorm,
			'sft/tokens': sft.metrics.tokens
		});
		// The group's rollout logprobs: the policy's own (on-policy, as sampled)
		const rollout = await model.scoreTokens(c.train.sequences);
		const group: TrainSequence[] = c.train.sequences.map((ids, b) => ({
			ids,
			trainMask: trainMask(ids),
			rolloutLogprobs: ids.map((_, i) =>
				i === 0 ? null : rollout.logprobs[b * (rollout.T - 1) + i - 1]
			),
			advantage: c.train.advantages[b],
			groupId: 0
		}));
		const grpo = await grpoStep(model, optimizer, group, { loss: 'cispo' });
		if (grpo.skipped) throw new Error(`the GRPO step was skipped: ${grpo.skipped}`);
		const last = await save({
			'train/loss': grpo.metrics.loss,
			'train/grad_norm': grpo.metrics.gradNorm,
			'train/reward': c.train.advantages.reduce((s, a) => s + a, 0) / c.train.advantages.length
		});
		if (last.step !== TRAINED_STEP) throw new Error(`the run ended at step ${last.step}`);
		trained = last.params;
		const base = await model.scoreTokens(c.sequences, { lora: false });
		const lora = await model.scoreTokens(c.sequences);
		scores = {
			base: perSequence(base.logprobs, c.sequences, base.T),
			lora: perSequence(lora.logprobs, c.sequences, lora.T)
		};
		const now = new Date().toISOString();
		await store.writeMeta({
			name: c.runName,
			project: 'tabrl',
			baseModel: pageBase,
			recipe,
			step: TRAINED_STEP,
			lastReward: steps.at(-1)!['train/reward'],
			created: now,
			updated: now
		});
	} finally {
		await store.close();
		optimizer.release();
		model.release();
	}

	// The page's Export (worker/run-host.ts exportRun), then the zip unzipped as a user would.
	const zip = packRunArchive(await readRunContents(new NodeRunStore(at(c.paths.run))));
	await writeFile(at(c.paths.zip), zip);
	const unzipped = unzipSync(zip);
	const entries = Object.keys(unzipped).sort();
	for (const [name, bytes] of Object.entries(unzipped)) {
		const file = at(join(c.paths.export, name));
		await mkdir(dirname(file), { recursive: true });
		await writeFile(file, bytes);
	}
	const imported = unpackRunArchive(zip); // the page's Import reads it back
	const adapterFiles = new Map<string, Uint8Array>();
	for (const name of await readdir(at(c.paths.adapter)))
		adapterFiles.set(name, new Uint8Array(await readFile(join(at(c.paths.adapter), name))));
	const decoded = await decodeTrainingCheckpoint(adapterFiles, {
		modelConfig: config,
		where: c.paths.adapter
	});
	const exportedExact = decoded.step === TRAINED_STEP && sameValues(decoded.params, trained);

	// `cli export --merge` of the unzipped run as it is: its run.json names the base by the
	// page's URL, so --base names the local copy (as a user who downloaded the zip would).
	const exportedRun = at(join(c.paths.export, c.runName));
	const merge = await runExport(
		parseExportArgs([
			'--merge',
			'--run',
			exportedRun,
			'--out',
			at(c.paths.merged),
			'--base',
			at(c.paths.base)
		])
	);

	// TabRL scores the merged folder as a plain model.
	const mergedCheckpoint = await openCheckpointFromDirectory(at(c.paths.merged));
	const mergedModel = await TransformerModel.create(
		gpu,
		mergedCheckpoint.config,
		mergedCheckpoint.weights
	);
	let merged: SequenceLogprobs;
	try {
		const m = await mergedModel.scoreTokens(c.sequences);
		merged = perSequence(m.logprobs, c.sequences, m.T);
	} finally {
		mergedModel.release();
	}
	const logprobs: TabrlLogprobs = { ...scores, merged };
	await writeFile(at(c.paths.logprobs), JSON.stringify(logprobs));
	return {
		name: c.name,
		architecture: config.architecture,
		lora: c.lora,
		steps,
		zipEntries: entries,
		importedSteps: [...imported.checkpoints.keys()],
		exportedExact,
		merge: { step: merge.step, tensors: merge.tensors, merged: merge.merged },
		effect: compare(scores.lora, scores.base).maxAbs,
		mergedVsLora: compare(merged, scores.lora).maxAbs
	};
}

export async function writeExportPlan(root: string, plan: ExportPlan): Promise<void> {
	await mkdir(root, { recursive: true });
	await writeFile(join(root, 'plan.json'), JSON.stringify(plan, null, 1) + '\n');
}

// ---- the CPU stand-in for export_roundtrip.py (`selftest`) ----

/** The fields of peft's LoraConfig (and PeftConfig) a recent peft saves: adapter_config.json
 * may hold these only (peft refuses a config with others). */
export const PEFT_LORA_FIELDS = new Set([
	'alpha_pattern',
	'auto_mapping',
	'base_model_name_or_path',
	'bias',
	'corda_config',
	'eva_config',
	'exclude_modules',
	'fan_in_fan_out',
	'inference_mode',
	'init_lora_weights',
	'layer_replication',
	'layers_pattern',
	'layers_to_transform',
	'loftq_config',
	'lora_alpha',
	'lora_bias',
	'lora_dropout',
	'megatron_config',
	'megatron_core',
	'modules_to_save',
	'peft_type',
	'qalora_group_size',
	'r',
	'rank_pattern',
	'revision',
	'target_modules',
	'target_parameters',
	'task_type',
	'trainable_token_indices',
	'use_dora',
	'use_qalora',
	'use_rslora',
	'peft_version'
]);

/** The entries the page's zip must hold for this run (two checkpoints, no seal files). */
export function expectedZipEntries(c: ExportCase): string[] {
	const files = [
		'tabrl-run.json',
		'run.json',
		'history.jsonl',
		...[1, 2].flatMap((step) =>
			[
				ADAPTER_CONFIG_FILE,
				ADAPTER_WEIGHTS_FILE,
				'optimizer.safetensors',
				'trainer_state.json'
			].map((f) => `checkpoints/${checkpointName(step)}/${f}`)
		)
	];
	return files.map((f) => `${c.runName}/${f}`).sort();
}

interface MergeCheck {
	/** max over merged tensors of max |got - want| / (atol + rtol |want|): <= 1 passes */
	worstRatio: number;
	mergedTensors: number;
	/** tensors other than the merged ones that differ from the base's (must be none) */
	changedOthers: string[];
	/** file names: the base's non-weight files + model.safetensors */
	files: string[];
	filesAsBase: boolean;
}

/** The merged folder against W + (alpha / r) B A computed here in f64. */
async function checkMerge(
	root: string,
	c: ExportCase,
	plan: ExportPlan,
	adapter: Awaited<ReturnType<typeof readPeftAdapter>>
): Promise<MergeCheck> {
	const at = (p: string) => resolve(root, p);
	const before = await openCheckpointFromDirectory(at(c.paths.base));
	const after = await openCheckpointFromDirectory(at(c.paths.merged));
	const { config } = before;
	const { rank, alpha } = adapter.config;
	const scale = alpha / rank;
	let worstRatio = 0;
	const targeted = new Set<string>();
	for (let layer = 0; layer < config.numLayers; layer++)
		for (const m of adapter.config.targetModules) {
			const name = `${projectionPath(layer, m)}.weight`;
			targeted.add(name);
			const [out, inF] = projectionShape(config, m);
			const w = await before.weights.readF32(name);
			const got = await after.weights.readF32(name);
			const a = adapter.params.get(peftName(layer, m, 'A'))!;
			const b = adapter.params.get(peftName(layer, m, 'B'))!;
			for (let o = 0; o < out; o++)
				for (let i = 0; i < inF; i++) {
					let s = 0;
					for (let k = 0; k < rank; k++) s += b[o * rank + k] * a[k * inF + i];
					const want = w[o * inF + i] + scale * s;
					const ratio =
						Math.abs(got[o * inF + i] - want) / (plan.mergeAtol + plan.mergeRtol * Math.abs(want));
					worstRatio = Math.max(worstRatio, Number.isNaN(ratio) ? Infinity : ratio);
				}
		}
	const changedOthers: string[] = [];
	for (const t of before.weights.list()) {
		if (targeted.has(t.name)) continue;
		const x = await before.weights.readF32(t.name);
		const y = await after.weights.readF32(t.name);
		if (x.length !== y.length || x.some((v, i) => !Object.is(v, y[i]))) changedOthers.push(t.name);
	}
	const isWeight = (n: string) =>
		n.endsWith('.safetensors') || n.endsWith('.safetensors.index.json');
	const files = (await readdir(at(c.paths.merged))).sort();
	const wantFiles = [
		...(await readdir(at(c.paths.base))).filter((n) => !isWeight(n)),
		'model.safetensors'
	].sort();
	return {
		worstRatio,
		mergedTensors: targeted.size,
		changedOthers,
		files,
		filesAsBase: files.join() === wantFiles.join()
	};
}

/** The f64 CPU reference's logprobs (src/lib/testing/reference.ts) for `tensors`. */
function referenceScores(
	c: ExportCase,
	tensors: Map<string, Float32Array>,
	lora?: { scale: number; params: ReadonlyMap<string, Float32Array> }
): SequenceLogprobs {
	const fixture = baseFixture(c);
	const batch = toTokenBatch(c.sequences);
	return perSequence(referenceLogprobs(fixture.config, tensors, batch, lora), c.sequences, batch.T);
}

export interface StandInCase {
	name: string;
	zipEntries: { got: string[]; want: string[]; ok: boolean };
	adapterConfig: {
		unknownKeys: string[];
		base_model_name_or_path: unknown;
		r: unknown;
		lora_alpha: unknown;
		target_modules: unknown;
		ok: boolean;
	};
	merge: MergeCheck & { ok: boolean };
	/** TabRL against the f64 reference: with the adapter, base, the merged folder. */
	lora: LogprobComparison;
	base: LogprobComparison;
	merged: LogprobComparison;
	/** TabRL's merged folder against TabRL's adapter (the merge changes nothing measurable) */
	mergedVsLora: LogprobComparison;
	adapterEffect: number;
	pass: boolean;
}

/**
 * What export_roundtrip.py checks, where there is no PyTorch: the zip's entries, the
 * adapter_config.json peft reads, the merge against an f64 merge, and TabRL's logprobs
 * against the f64 CPU reference model (standing in for transformers + peft: it reads the
 * adapter with TabRL's own reader, so only the GPU machine run proves peft's loading).
 */
export async function checkStandIn(root: string): Promise<{ cases: StandInCase[]; pass: boolean }> {
	const plan = await readJson<ExportPlan>(join(root, 'plan.json'));
	const at = (p: string) => resolve(root, p);
	const cases: StandInCase[] = [];
	for (const c of plan.cases) {
		const fixture = baseFixture(c);
		const config = fixture.config;
		const got = Object.keys(unzipSync(new Uint8Array(await readFile(at(c.paths.zip))))).sort();
		const want = expectedZipEntries(c);
		const configText = await readFile(join(at(c.paths.adapter), ADAPTER_CONFIG_FILE), 'utf8');
		const raw = JSON.parse(configText) as Record<string, unknown>;
		const unknownKeys = Object.keys(raw).filter((k) => !PEFT_LORA_FIELDS.has(k));
		const targets = raw.target_modules as string[];
		const adapterConfig = {
			unknownKeys,
			base_model_name_or_path: raw.base_model_name_or_path,
			r: raw.r,
			lora_alpha: raw.lora_alpha,
			target_modules: raw.target_modules,
			ok:
				unknownKeys.length === 0 &&
				raw.peft_type === 'LORA' &&
				raw.task_type === 'CAUSAL_LM' &&
				raw.base_model_name_or_path === c.baseRepoId &&
				raw.r === c.lora.rank &&
				raw.lora_alpha === c.lora.alpha &&
				Array.isArray(targets) &&
				[...targets].sort().join() === [...c.lora.targets].sort().join() &&
				raw.use_rslora === false &&
				raw.use_dora === false &&
				raw.lora_dropout === 0 &&
				raw.bias === 'none'
		};
		const adapter = await readPeftAdapter(
			config,
			configText,
			memoryByteSource(
				new Uint8Array(await readFile(join(at(c.paths.adapter), ADAPTER_WEIGHTS_FILE)))
			)
		);
		const mergeCheck = await checkMerge(root, c, plan, adapter);
		const merge = {
			...mergeCheck,
			ok:
				mergeCheck.worstRatio <= 1 &&
				mergeCheck.mergedTensors === config.numLayers * c.lora.targets.length &&
				mergeCheck.changedOthers.length === 0 &&
				mergeCheck.filesAsBase
		};
		const ours = await readJson<TabrlLogprobs>(at(c.paths.logprobs));
		const mergedOpen = await openCheckpointFromDirectory(at(c.paths.merged));
		const mergedTensors = new Map<string, Float32Array>();
		for (const t of mergedOpen.weights.list())
			mergedTensors.set(t.name, await mergedOpen.weights.readF32(t.name));
		const refBase = referenceScores(c, fixture.tensors);
		const refLora = referenceScores(c, fixture.tensors, {
			scale: adapter.config.alpha / adapter.config.rank,
			params: adapter.params
		});
		const refMerged = referenceScores(c, mergedTensors);
		const r = {
			lora: compare(ours.lora, refLora),
			base: compare(ours.base, refBase),
			merged: compare(ours.merged, refMerged),
			mergedVsLora: compare(ours.merged, ours.lora),
			adapterEffect: compare(refLora, refBase).maxAbs
		};
		cases.push({
			name: c.name,
			zipEntries: { got, want, ok: got.join() === want.join() },
			adapterConfig,
			merge,
			...r,
			pass:
				got.join() === want.join() &&
				adapterConfig.ok &&
				merge.ok &&
				within(r.lora) &&
				within(r.base) &&
				within(r.merged) &&
				within(r.mergedVsLora) &&
				r.adapterEffect >= plan.minAdapterEffect
		});
	}
	return { cases, pass: cases.length > 0 && cases.every((c) => c.pass) };
}
