/**
 * @file `cli train`: a run from the command line through the one run engine (`runRecipe` on
 * a TrainableModel with the Node LocalBackend), as the page's Train panel drives it. The
 * recipe is the --env preset (or OUT/run.json's, continuing that run) changed by the flags;
 * the judge's key comes only from the variable --judge-api-key-env names. OUT holds
 * history.jsonl, checkpoints/ (PEFT adapter + optimizer) and run.json, one writer at a time
 * (run.lock). Progress on stderr; stdout one JSON line (TrainOutput). Exit 0 when 'done' or
 * 'stopped' (SIGINT/SIGTERM stop cleanly), 3 when 'stuck', 1 on 'run-locked'.
 */
import { readFile, stat } from 'node:fs/promises';
import { basename, resolve } from 'node:path';
import { LocalBackend } from '../../src/lib/agent/backend/node/backend';
import { TrainableModel } from '../../src/lib/agent/model';
import {
	PRESET_NAMES,
	runRecipe,
	sftSteps,
	warmStartPath,
	type Recipe,
	type RunEvent,
	type RunSummary
} from '../../src/lib/run';
import { ensureBundledModel } from '../default-model';
import { CliInputError, ExitWith } from './args';
import { watchLauncher } from './launcher';
import { openModelFolder } from './model-folder';
import { STATIC_ROOT } from './static-root';
import { EXIT_STUCK, type TrainArgs } from './train-args';
import { savedRecipe, trainRecipe } from './train-recipe';
import { downloadProgress } from './download-progress';
import { modelFolder } from '../../src/lib/model/hf/node/hub-folder';

// What cli.ts reads of every subcommand: its usage line and its flags' parser.
export { TRAIN_USAGE, parseTrainArgs } from './train-args';

const isDirectory = async (path: string) =>
	(await stat(path).catch(() => undefined))?.isDirectory() ?? false;

/** stdout's one line. */
export interface TrainOutput {
	/** The model's step (SFT steps included) and the GRPO steps done. */
	step: number;
	grpo_step: number;
	status: RunSummary['status'];
	reason: string;
	/** Mean train reward of the last GRPO step of this call (null: none ran). */
	reward: number | null;
	/** The last greedy evaluation of this call (null: none ran). */
	eval_reward: number | null;
	out: string;
}

const fixed = (x: number | undefined, digits = 3) =>
	typeof x === 'number' && Number.isFinite(x) ? x.toFixed(digits) : '-';

/** One stderr line per step and evaluation (and the end); nothing for phases and rollouts. */
function progressLine(event: RunEvent, recipe: Recipe): string | undefined {
	const sftTotal = sftSteps(recipe);
	if (event.type === 'step') {
		const m = event.metrics;
		if (event.split === 'sft')
			return (
				`sft step ${event.step}/${sftTotal}: ` +
				(event.skipped ? `skipped (${event.skipped})` : `loss ${fixed(m['sft/loss'], 4)}`)
			);
		// The step tried: the model's step after it, or before it when it changed nothing.
		const tried = event.step + (event.skipped ? 1 : 0);
		const head =
			`step ${tried} (grpo ${tried - sftTotal}/${recipe.grpo.steps}): ` +
			`reward ${fixed(m['train/reward'])} ± ${fixed(m['train/reward_std_dev'])}` +
			// RULER: the judge's scores are the reward; the game's own is shown beside them
			(m['train/independent_reward'] === undefined
				? ''
				: ` (game's reward ${fixed(m['train/independent_reward'])})`);
		if (event.skipped === 'no-signal')
			return `${head}, no reward spread: not trained, retrying with new scenarios`;
		if (event.skipped === 'judge-failed')
			return (
				`step ${tried} (grpo ${tried - sftTotal}/${recipe.grpo.steps}): the judge failed on every group ` +
				`(${m['train/ruler_dropped_groups'] ?? 0} dropped): not trained, retrying with new scenarios`
			);
		if (event.skipped) return `${head}, skipped (${event.skipped})`;
		return (
			`${head}, loss ${fixed(m['train/loss'], 4)}` +
			(m['train/kl'] === undefined ? '' : `, kl ${fixed(m['train/kl'], 4)}`) +
			`, ${fixed((m['train/step_ms'] ?? 0) / 1000, 1)} s`
		);
	}
	if (event.type === 'eval') {
		const r = event.report;
		const more = Object.entries(r.metrics).map(([k, v]) => `${k} ${fixed(v)}`);
		return (
			`eval at step ${r.step} (T ${r.temperature}, ${r.games} games): reward ${fixed(r.reward)}` +
			(more.length ? ` (${more.join(', ')})` : '') +
			`, ${fixed(r.seconds, 1)} s`
		);
	}
	if (event.type === 'end') {
		const { status, reason } = event.summary;
		return reason.startsWith(`${status}:`) ? reason : `${status}: ${reason}`;
	}
	return undefined;
}

/**
 * Aborts on SIGINT/SIGTERM, or when the npm/npx that launched this process ends (npm does not
 * pass SIGTERM on: launcher.ts); a second signal exits at once. `dispose` removes the handlers.
 */
function stopOnSignals(abort: AbortController, out: string): { dispose(): void } {
	const stop = (why: string, code: number) => {
		if (abort.signal.aborted) process.exit(code);
		process.stderr.write(
			`${why}: stopping after this step; the run is saved in ${out} (again to quit now)\n`
		);
		abort.abort();
	};
	const onSignal = (signal: NodeJS.Signals) => stop(signal, 128 + (signal === 'SIGINT' ? 2 : 15));
	process.on('SIGINT', onSignal);
	process.on('SIGTERM', onSignal);
	const launcher = watchLauncher((pid) =>
		stop(`npm, which started this run, ended (process ${pid} of its chain)`, 143)
	);
	return {
		dispose() {
			process.off('SIGINT', onSignal);
			process.off('SIGTERM', onSignal);
			launcher.dispose();
		}
	};
}

export async function runTrain(input: TrainArgs): Promise<TrainOutput | ExitWith> {
	const out = resolve(input.out);
	const args: TrainArgs = input.rubric
		? {
				...input,
				rubricText: await readFile(input.rubric, 'utf8').catch((error: Error) => {
					throw new CliInputError(`--rubric: cannot read ${input.rubric} (${error.message})`);
				})
			}
		: input;
	const judgeApiKey = args.judgeApiKeyEnv ? process.env[args.judgeApiKeyEnv] : undefined;
	if (args.judgeApiKeyEnv && !judgeApiKey)
		throw new CliInputError(
			`--judge-api-key-env: the environment variable ${args.judgeApiKeyEnv} is not set (or empty)`
		);
	// a catalog key or model URL: downloaded once into the cache, then a folder like any other
	const model = args.model && (await modelFolder(args.model, { onProgress: downloadProgress() }));
	const recipe = trainRecipe({ ...args, model }, STATIC_ROOT, await savedRecipe(out));
	// Every file problem before the GPU is touched.
	await ensureBundledModel(recipe.baseModel, STATIC_ROOT);
	await openModelFolder(recipe.baseModel);
	const warm = recipe.warmStart?.adapter;
	if (warm && !(await isDirectory(warm))) {
		const shipped = PRESET_NAMES.find((p) => warm === resolve(STATIC_ROOT, warmStartPath(p)));
		throw new CliInputError(
			`--warm-start: ${warm} is not a directory` +
				(shipped
					? ` (the warm start shipped for ${shipped}; make it with ` +
						`\`npx tsx tools/make-warm-start.ts --env ${shipped}\`, or train with --warm-start none)`
					: ' (give a PEFT adapter folder: adapter_config.json, adapter_model.safetensors)')
		);
	}

	const backend = new LocalBackend({
		runDir: () => out,
		memoryBudgetBytes: args.gpuMemory && Math.round(args.gpuMemory * 2 ** 30),
		onWarning: (message) => process.stderr.write(`warning: ${message}\n`)
	});
	const abort = new AbortController();
	const signals = stopOnSignals(abort, out);
	try {
		const model = new TrainableModel({
			name: basename(out),
			project: 'cli',
			baseModel: recipe.baseModel,
			warmStart: recipe.warmStart ?? undefined,
			lora: recipe.lora,
			seed: recipe.seed,
			maxContext: recipe.maxContext,
			recipe
		});
		const { step } = await model.register(backend);
		const g = recipe.grpo;
		process.stderr.write(
			`train ${recipe.environment} on ${recipe.baseModel}, warm start ` +
				(recipe.warmStart ? `${recipe.warmStart.adapter} (${recipe.warmStart.mode})` : 'none') +
				(recipe.sft ? `, ${sftSteps(recipe)} SFT steps` : '') +
				`, ${g.steps} GRPO steps of ${g.autoSize ? `auto (from ${g.groups})` : g.groups} x ${g.groupSize} games -> ${out}` +
				(step > 0 ? ` (continuing at step ${step})` : '') +
				'\n'
		);
		let sizedGroups: number | null = null;
		const summary = await runRecipe(model, recipe, {
			signal: abort.signal,
			judgeApiKey,
			onEvent: (event) => {
				// auto sizing: said when the games per step change (every step says why)
				if (event.type === 'sized') {
					if (event.groups !== sizedGroups) process.stderr.write(event.reason + '\n');
					sizedGroups = event.groups;
					return;
				}
				const line = progressLine(event, recipe);
				if (line) process.stderr.write(line + '\n');
			}
		});
		const result: TrainOutput = {
			step: summary.step,
			grpo_step: summary.grpoStep,
			status: summary.status,
			reason: summary.reason,
			reward: summary.reward,
			eval_reward: summary.evalReward,
			out
		};
		return summary.status === 'stuck' ? new ExitWith(result, EXIT_STUCK) : result;
	} finally {
		signals.dispose();
		await backend.close();
	}
}
