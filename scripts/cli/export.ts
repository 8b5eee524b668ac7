/**
 * @file `cli export --merge`: a run as a full Hugging Face model folder (the base's config
 * and tokenizer files, one model.safetensors with the adapter folded in, W + (alpha / r) B A,
 * after the warm start for a 'merged' run), in the base's dtypes.
 *
 *   export --merge --run DIR --out DIR [--step N] [--base DIR] [--warm-start DIR]
 *
 * A page export's bundled base is found under static/; any other URL needs --base. The
 * checkpoint's seal is checked first; the folder is renamed into place (an existing --out is
 * refused). stdout: {"out", "step", "base", "tensors", "merged"}.
 */
import { existsSync } from 'node:fs';
import { copyFile, mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { readWarmStartFiles } from '../../src/lib/agent/backend/warm-start-files';
import { decodeTrainingCheckpoint } from '../../src/lib/grpo/store/checkpoint';
import { NodeRunStore } from '../../src/lib/grpo/store/node/run-store';
import { memoryByteSource } from '../../src/lib/model/hf/byte-source';
import { readPeftAdapter, type PeftAdapter } from '../../src/lib/model/hf/peft-adapter';
import { encodeSafetensors, type TensorToWrite } from '../../src/lib/model/hf/safetensors-writer';
import type { WeightDType, WeightSource } from '../../src/lib/model/types';
import { MergedWeights } from '../../src/lib/model/hf/warm-start';
import { projectionPath } from '../../src/lib/model/hf/weight-spec';
import { rootBundled, validateRecipe, type Recipe } from '../../src/lib/run';
import { CliInputError, numberFlag, parseFlags, UsageError } from './args';
import { ensureBundledModel } from '../default-model';
import { openModelFolder } from './model-folder';
import { STATIC_ROOT } from './static-root';

export const EXPORT_USAGE =
	'usage: npm run -s cli -- export --merge --run DIR --out DIR [--step N] [--base DIR] ' +
	'[--warm-start DIR]\n' +
	"    a full Hugging Face model folder: the base's files with the run's adapter merged in\n" +
	"    --base, --warm-start: local copies of the run's base model and warm start, when its " +
	'run.json names them by URL (a run exported from the page) or they moved';

export interface ExportArgs {
	run: string;
	out: string;
	step?: number;
	/** A local folder holding the run's base model (in place of its recipe's). */
	base?: string;
	/** A local folder holding the run's warm start (in place of its recipe's). */
	warmStart?: string;
}

export interface ExportOutput {
	out: string;
	step: number;
	base: string;
	tensors: number;
	merged: number;
}

const FLAGS = { merge: {}, run: {}, out: {}, step: {}, base: {}, 'warm-start': {} };

export function parseExportArgs(argv: readonly string[]): ExportArgs {
	// --merge takes no value: the only export there is
	const rest = argv.filter((a) => a !== '--merge');
	if (rest.length === argv.length)
		throw new UsageError('--merge is required (the export writes a merged model)', EXPORT_USAGE);
	const f = parseFlags(rest, FLAGS, EXPORT_USAGE);
	if (!f.run) throw new UsageError('--run is required', EXPORT_USAGE);
	if (!f.out) throw new UsageError('--out is required', EXPORT_USAGE);
	const step = numberFlag(
		'step',
		f.step,
		(x) => Number.isSafeInteger(x) && x >= 0,
		'an integer >= 0',
		EXPORT_USAGE
	);
	return {
		run: f.run,
		out: f.out,
		...(step === undefined ? {} : { step }),
		...(f.base ? { base: f.base } : {}),
		...(f['warm-start'] ? { warmStart: f['warm-start'] } : {})
	};
}

const DTYPE: Record<WeightDType, TensorToWrite['dtype']> = {
	float32: 'F32',
	float16: 'F16',
	bfloat16: 'BF16'
};

const isUrl = (s: string) => /^[a-z][a-z0-9+.-]*:\/\//i.test(s);

/**
 * The recipe with its base and warm start where they are on this machine: the flags' folders,
 * else the bundled ones under static/ (a page's run names them by the page's URL), else as
 * saved. A location still given by URL is refused naming the flag that would fix it.
 */
function localRecipe(saved: Recipe, args: ExportArgs): Recipe {
	const r = rootBundled(saved, STATIC_ROOT);
	const recipe: Recipe = {
		...r,
		baseModel: args.base ? resolve(args.base) : r.baseModel,
		warmStart:
			r.warmStart &&
			(args.warmStart ? { ...r.warmStart, adapter: resolve(args.warmStart) } : r.warmStart)
	};
	if (isUrl(recipe.baseModel))
		throw new CliInputError(
			`--base: the run's base model is ${recipe.baseModel}, not a folder here; give --base DIR, a local copy of it`
		);
	if (recipe.warmStart?.mode === 'merged' && isUrl(recipe.warmStart.adapter))
		throw new CliInputError(
			`--warm-start: the run trained on the warm start ${recipe.warmStart.adapter}, not a folder here; give --warm-start DIR, a local copy of it`
		);
	return recipe;
}

/** The base's files other than its weights: config, tokenizer, chat template, ... */
const isWeightFile = (name: string) =>
	name.endsWith('.safetensors') || name === 'model.safetensors.index.json';

export async function runExport(args: ExportArgs): Promise<ExportOutput> {
	const runDir = resolve(args.run);
	const out = resolve(args.out);
	if (existsSync(out)) throw new CliInputError(`--out: ${out} already exists; give a new folder`);
	const store = new NodeRunStore(runDir);
	const meta = await store.readMeta();
	if (!meta?.recipe)
		throw new CliInputError(
			`--run: ${runDir} holds no run of \`cli train\` (no run.json with a recipe)`
		);
	const recipe = localRecipe(validateRecipe(meta.recipe as Recipe), args);
	const steps = await store.listCheckpoints();
	const step = args.step ?? steps.at(-1);
	if (step === undefined || !steps.includes(step))
		throw new CliInputError(
			`--step: ${runDir} keeps checkpoints of steps ${steps.join(', ') || '(none)'}`
		);
	await ensureBundledModel(recipe.baseModel, STATIC_ROOT);
	const base = await openModelFolder(recipe.baseModel);
	const { config } = base;
	const where = join(runDir, 'checkpoints', String(step).padStart(4, '0'));
	// loadCheckpoint checks every file against the checkpoint's sha256 seal
	const ckpt = await decodeTrainingCheckpoint(await store.loadCheckpoint(step), {
		modelConfig: config,
		where
	});
	const adapters: PeftAdapter[] = [];
	if (recipe.warmStart?.mode === 'merged') {
		const dir = recipe.warmStart.adapter;
		const warm = await readWarmStartFiles(dir, async (name) =>
			readFile(join(dir, name)).then(
				(b) => new Uint8Array(b),
				() => undefined
			)
		);
		adapters.push(
			await readPeftAdapter(config, warm.adapterConfigJson, memoryByteSource(warm.adapterBytes), {
				ignoreDropout: true
			})
		);
	}
	adapters.push({ config: ckpt.lora, params: ckpt.params });
	const weights = adapters.reduce<WeightSource>(
		(w, adapter) => new MergedWeights(config, w, adapter),
		base.weights
	);
	const stored = new Map(base.weights.list().map((t) => [t.name, t]));
	const tensors: TensorToWrite[] = [];
	for (const t of weights.list()) {
		const original = stored.get(t.name)!;
		tensors.push({
			name: t.name,
			dtype: DTYPE[original.dtype],
			shape: original.shape,
			data: await weights.readF32(t.name)
		});
	}
	const merged = new Set(
		adapters.flatMap((a) =>
			Array.from({ length: config.numLayers }, (_, layer) =>
				a.config.targetModules.map((m) => `${projectionPath(layer, m)}.weight`)
			).flat()
		)
	).size;

	// written next to --out, then renamed into place: nothing half-written is left
	const temp = join(dirname(out), `.${basename(out)}.tmp-${process.pid}`);
	await rm(temp, { recursive: true, force: true });
	try {
		await mkdir(temp, { recursive: true });
		for (const name of await readdir(recipe.baseModel))
			if (!isWeightFile(name)) await copyFile(join(recipe.baseModel, name), join(temp, name));
		await writeFile(join(temp, 'model.safetensors'), encodeSafetensors(tensors));
		await rename(temp, out);
	} catch (error) {
		await rm(temp, { recursive: true, force: true });
		throw error;
	}
	return { out, step, base: recipe.baseModel, tensors: tensors.length, merged };
}
