/**
 * @file The export round trip's plan and folder (one DIR both halves read and write):
 *   plan.json                  cases, sequences, tolerances, every path below
 *   <case>/tabrl-parity/<case>-base/  the base, where the adapter's portable base name
 *                              resolves from <case> as a local path
 *   <case>/run/, run.zip       the two-step run (SFT, GRPO) and the page's Export of it
 *   <case>/export/<run>/       run.zip unzipped: its latest checkpoint is the adapter peft loads
 *   <case>/merged/             `cli export --merge --base` of that run
 *   <case>/tabrl-logprobs.json TabRL's logprobs: base (LoRA off), lora, merged
 *   export-report.json, selftest-report.json: the Python side's and the CPU stand-in's verdicts
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { checkpointName } from '../../src/lib/grpo/store/run-store';
import { ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE } from '../../src/lib/model/hf/peft-adapter';
import { encodeSafetensors } from '../../src/lib/model/hf/safetensors-writer';
import { PROJECTIONS, weightSpecs, type ProjectionName } from '../../src/lib/model/hf/weight-spec';
import { makeFixture, type Fixture, type FixtureName } from '../../src/lib/testing/fixtures';
import { Rng } from '../../src/lib/util/random';
import { MIN_ADAPTER_EFFECT, TOLERANCE, type SequenceLogprobs } from './peft-roundtrip-lib';

export { TOLERANCE, MIN_ADAPTER_EFFECT };
/** Merged weight against W + (alpha / r) B A in f64: relative, plus an absolute floor for
 * entries near 0 (f32 arithmetic over a rank <= 8 sum: ~1e-7 relative). */
export const MERGE_RTOL = 1e-5;
export const MERGE_ATOL = 1e-6;
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

export async function writeExportPlan(root: string, plan: ExportPlan): Promise<void> {
	await mkdir(root, { recursive: true });
	await writeFile(join(root, 'plan.json'), JSON.stringify(plan, null, 1) + '\n');
}

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
