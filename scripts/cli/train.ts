/**
 * @file `cli train`: a run from the command line, driven by the one run engine
 * (src/lib/run: a recipe executed by `runRecipe` on a TrainableModel registered with the Node
 * LocalBackend), exactly as the page's Train panel drives it through the worker.
 *
 *   train --out DIR [--env tictactoe|2048|inbox|letters] [--model DIR] [--warm-start preset|none|DIR]
 *       [--warm-start-mode merged|stacked] [--steps N] [--groups auto|G] [--group-size K] [--lr X]
 *       [--loss cispo|ppo] [--kl-beta B] [--temperature T] [--max-tokens N] [--seed S]
 *       [--rank R] [--alpha A] [--sft-first N] [--eval-every N] [--eval-games N]
 *       [--max-no-signal N] [--reward env|ruler|ruler+env --judge-base-url URL --judge-model NAME
 *       [--judge-api-key-env VAR] [--rubric FILE]]
 *
 * --reward ruler trains on RULER's scores (src/lib/agent/ruler: ART's relative LLM judge) from
 * the OpenAI-compatible judge at --judge-base-url; ruler+env on their sum with the game's
 * reward. Evaluations still score the game's own reward. The judge's API key is read from the
 * environment variable --judge-api-key-env names, never from the command line, and is not
 * saved with the run (run.json keeps the judge's URL, model and rubric).
 *
 * The recipe starts from the environment's preset (presets.ts, rooted at static/) and each
 * flag given replaces its field; a second call with the same --out starts from the recipe
 * saved in OUT/run.json instead, so it continues the run (the engine reads the model's step:
 * mid-SFT continues SFT) with only the flags given changed. --warm-start defaults to the
 * preset's (tic-tac-toe: the warm start shipped for the bundled model) when --model is the
 * bundled model and to none otherwise (a shipped warm start is for tabrl-tiny only); given
 * explicitly for another model, the backend refuses it ('warm-start-mismatch').
 *
 * OUT/history.jsonl gets a line per step and evaluation, OUT/checkpoints/<step>/ the adapter
 * in PEFT's format with the optimizer state (the latest and the best by val/reward kept),
 * OUT/run.json the run's summary (base, warm start, recipe, step). Progress goes to stderr,
 * one line per step and evaluation; stdout gets one JSON line: {"step", "grpo_step",
 * "status", "reason", "reward", "eval_reward", "out"}. Exit status: 0 when the run is 'done'
 * or 'stopped' (SIGINT/SIGTERM stop it cleanly, within a rollout turn), 3 when it is
 * 'stuck' (no reward spread in --max-no-signal rounds in a row).
 *
 * One `train` per --out: OUT/run.lock names the writer's pid, and a second call while it
 * lives fails with 'run-locked' (exit 1); after a crash (a kill, a power cut) the next call
 * takes the dead process's lock over, removes a half-written checkpoint and restores a
 * step's history line written with its checkpoint, each said on stderr as `warning: ...`
 * (as is a torn history line, with its line number).
 */
import { existsSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { LocalBackend } from '../../src/lib/agent/backend/node/backend';
import { TrainableModel } from '../../src/lib/agent/model';
import { NodeRunStore } from '../../src/lib/grpo/store/node/run-store';
import type { WarmStartMode } from '../../src/lib/model/hf/warm-start';
import {
	bundledModelPath,
	DEFAULT_PRESET,
	DEFAULT_SFT,
	ENVIRONMENT_NAMES,
	ENVIRONMENTS,
	isEnvironmentName,
	PRESET_NAMES,
	REWARD_SOURCES,
	preset,
	rootBundled,
	runRecipe,
	sftSteps,
	sizedGrpo,
	validateRecipe,
	warmStartPath,
	type EnvironmentName,
	type PresetName,
	type Recipe,
	type RewardConfig,
	type RewardSource,
	type RunEvent,
	type RunSummary
} from '../../src/lib/run';
import { ensureBundledModel } from '../default-model';
import { CliInputError, ExitWith, numberFlag, parseFlags, UsageError } from './args';
import { watchLauncher } from './launcher';
import { openModelFolder } from './model-folder';

export const TRAIN_USAGE =
	`usage: npm run -s cli -- train --out DIR [--env ${ENVIRONMENT_NAMES.join('|')}] [--model DIR] ` +
	'[--warm-start preset|none|DIR] [--warm-start-mode merged|stacked] [--steps N] [--groups auto|G] ' +
	'[--group-size K] [--lr X] [--loss cispo|ppo] [--kl-beta B] [--temperature T] ' +
	'[--max-tokens N] [--seed S] [--rank R] [--alpha A] [--sft-first N] [--eval-every N] ' +
	'[--eval-games N] [--max-no-signal N] [--reward env|ruler|ruler+env] [--judge-base-url URL] ' +
	'[--judge-model NAME] [--judge-api-key-env VAR] [--rubric FILE] [--changes SHARE]\n' +
	"    defaults: the --env's preset (src/lib/run/presets.ts); again with the same --out: " +
	'continue that run (its saved recipe, changed by the flags given)\n' +
	"    --sft-first N: first N SFT steps on the environment's demonstrations (N x G games, " +
	'G a step), then --steps GRPO steps\n' +
	"    --groups auto (the presets' default): games per step sized so a step takes 2-4 s on this " +
	"device, starting at the preset's; --groups G: G groups every step\n" +
	'    --changes SHARE (inbox): the share 0..1 of emails a later email changes, so their ' +
	'questions need two emails';

/** Exit status of a run that ended 'stuck' (no reward spread: nothing to learn from). */
export const EXIT_STUCK = 3;

/** The flags as given: each field undefined when its flag is absent. */
export interface TrainArgs {
	out: string;
	env?: EnvironmentName;
	model?: string;
	/** 'preset' (the environment's shipped one), a preset's name, 'none', or a folder. */
	warmStart?: string;
	warmStartMode?: WarmStartMode;
	steps?: number;
	/** 'auto': sized to the device (the presets' default; run/sizing.ts). */
	groups?: number | 'auto';
	groupSize?: number;
	lr?: number;
	loss?: 'cispo' | 'ppo';
	klBeta?: number;
	temperature?: number;
	maxTokens?: number;
	seed?: number;
	rank?: number;
	alpha?: number;
	sftFirst?: number;
	evalEvery?: number;
	evalGames?: number;
	maxNoSignal?: number;
	reward?: RewardSource;
	judgeBaseUrl?: string;
	judgeModel?: string;
	/** The environment variable holding the judge's API key (never the key itself). */
	judgeApiKeyEnv?: string;
	/** A file whose text is RULER's rubric. */
	rubric?: string;
	/** The rubric file's text (runTrain reads it). */
	rubricText?: string;
	/** inbox: the share of emails a later email changes (envOptions.changes). */
	changes?: number;
}

const isCount = (n: number, min = 1) => Number.isSafeInteger(n) && n >= min;
const isPositive = (n: number) => Number.isFinite(n) && n > 0;

const FLAGS = {
	out: {},
	env: {},
	model: {},
	'warm-start': {},
	'warm-start-mode': {},
	steps: {},
	groups: {},
	'group-size': {},
	lr: {},
	loss: {},
	'kl-beta': {},
	temperature: {},
	'max-tokens': {},
	seed: {},
	rank: {},
	alpha: {},
	'sft-first': {},
	'eval-every': {},
	'eval-games': {},
	'max-no-signal': {},
	reward: {},
	'judge-base-url': {},
	'judge-model': {},
	'judge-api-key-env': {},
	rubric: {},
	changes: {}
};

export function parseTrainArgs(argv: readonly string[]): TrainArgs {
	const f = parseFlags(argv, FLAGS, TRAIN_USAGE);
	if (f.out === undefined) throw new UsageError('--out is required', TRAIN_USAGE);
	const oneOf = <T extends string>(
		name: string,
		value: string | undefined,
		allowed: readonly T[]
	) => {
		if (value !== undefined && !allowed.includes(value as T))
			throw new UsageError(`--${name}: '${value}' is not ${allowed.join(' or ')}`, TRAIN_USAGE);
		return value as T | undefined;
	};
	const n = (name: keyof typeof FLAGS, ok: (n: number) => boolean, what: string) =>
		numberFlag(name, f[name], ok, what, TRAIN_USAGE);
	const count = (name: keyof typeof FLAGS, min = 1) =>
		n(name, (x) => isCount(x, min), `an integer >= ${min}`);
	if (f.env !== undefined && !isEnvironmentName(f.env))
		throw new UsageError(
			`--env: '${f.env}' is not an environment (${ENVIRONMENT_NAMES.join(', ')})`,
			TRAIN_USAGE
		);
	for (const name of [
		'out',
		'model',
		'warm-start',
		'judge-base-url',
		'judge-model',
		'judge-api-key-env',
		'rubric'
	] as const)
		if (f[name] !== undefined && f[name].trim() === '')
			throw new UsageError(`--${name} is empty`, TRAIN_USAGE);
	return {
		out: f.out,
		env: f.env as EnvironmentName | undefined,
		model: f.model,
		warmStart: f['warm-start'],
		warmStartMode: oneOf('warm-start-mode', f['warm-start-mode'], ['merged', 'stacked']),
		steps: count('steps', 0),
		groups: f.groups === 'auto' ? 'auto' : count('groups'),
		groupSize: count('group-size', 2),
		lr: n('lr', isPositive, 'a positive number'),
		loss: oneOf('loss', f.loss, ['cispo', 'ppo']),
		klBeta: n('kl-beta', (x) => Number.isFinite(x) && x >= 0, 'a number >= 0'),
		temperature: n('temperature', isPositive, 'a positive number'),
		maxTokens: count('max-tokens'),
		seed: n('seed', Number.isSafeInteger, 'an integer'),
		rank: count('rank'),
		alpha: n('alpha', isPositive, 'a positive number'),
		sftFirst: count('sft-first', 0),
		evalEvery: count('eval-every', 0),
		evalGames: count('eval-games'),
		maxNoSignal: count('max-no-signal'),
		reward: oneOf('reward', f.reward, REWARD_SOURCES),
		judgeBaseUrl: f['judge-base-url'],
		judgeModel: f['judge-model'],
		judgeApiKeyEnv: f['judge-api-key-env'],
		rubric: f.rubric,
		changes: n('changes', (x) => x >= 0 && x <= 1, 'a share from 0 to 1')
	};
}

/** Where the bundled model and the shipped warm starts are: the project's static/ folder. */
export const STATIC_ROOT =
	[resolve(import.meta.dirname, '../../static'), resolve('static')].find((dir) =>
		existsSync(join(dir, 'warm-starts'))
	) ?? resolve(import.meta.dirname, '../../static'); // (the first: a bundle elsewhere, e.g. .gpu/, uses the working directory's)

/**
 * The run's recipe: the saved one (`saved`, from OUT/run.json when the run exists) or the
 * environment's preset under `staticRoot`, with each flag given replacing its field.
 * Locations come out absolute (the backend refuses to reopen a run with another base or
 * warm start, compared as strings). Throws UsageError for flags that do not fit together
 * and CliInputError for flags that do not fit the saved run.
 */
export function trainRecipe(
	args: TrainArgs,
	staticRoot: string = STATIC_ROOT,
	saved?: Recipe
): Recipe {
	if (saved && args.env && args.env !== saved.environment)
		throw new CliInputError(
			`--env: ${args.out} holds a ${saved.environment} run; give another --out for ${args.env}`
		);
	const env = args.env ?? saved?.environment ?? DEFAULT_PRESET;
	const base = saved ?? preset(env, staticRoot);
	const baseModel = resolve(args.model ?? base.baseModel);
	const bundled = resolve(staticRoot, bundledModelPath(env));
	const shipped = (name: PresetName) => resolve(staticRoot, warmStartPath(name));

	let adapter: string | null;
	if (args.warmStart === undefined)
		adapter = saved
			? (saved.warmStart?.adapter ?? null)
			: baseModel === bundled && base.warmStart
				? resolve(base.warmStart.adapter)
				: null; // a shipped warm start is for the bundled model only
	else if (args.warmStart === 'none') adapter = null;
	else if (args.warmStart === 'preset') adapter = shipped(env);
	else if ((PRESET_NAMES as readonly string[]).includes(args.warmStart))
		adapter = shipped(args.warmStart as PresetName);
	else adapter = resolve(args.warmStart);
	if (args.warmStartMode && !adapter)
		throw new UsageError('--warm-start-mode: the run has no warm start', TRAIN_USAGE);
	const warmStart = adapter
		? { adapter, mode: args.warmStartMode ?? base.warmStart?.mode ?? 'merged' }
		: null;

	const g = base.grpo;
	// --groups N fixes the games per step; auto sizes them (the preset's bounds or the default)
	const sized =
		args.groups === undefined
			? g
			: sizedGrpo(
					args.groups === 'auto' ? { ...preset(env, staticRoot).grpo, ...g } : g,
					args.groups
				);
	const grpo = {
		...sized,
		steps: args.steps ?? g.steps,
		groupSize: args.groupSize ?? g.groupSize,
		learningRate: args.lr ?? g.learningRate,
		loss: args.loss ?? g.loss,
		klBeta: args.klBeta ?? g.klBeta,
		temperature: args.temperature ?? g.temperature,
		maxTokens: args.maxTokens ?? g.maxTokens
	};
	let sft = base.sft;
	if (args.sftFirst !== undefined)
		sft =
			args.sftFirst === 0
				? null
				: { ...DEFAULT_SFT, games: args.sftFirst * grpo.groups, batchSize: grpo.groups };
	if (sft && !ENVIRONMENTS[env].demonstrations)
		throw new UsageError(`--sft-first: ${env} has no demonstrations to imitate`, TRAIN_USAGE);
	if (args.changes !== undefined && env !== 'inbox')
		throw new UsageError(`--changes: only for --env inbox, not ${env}`, TRAIN_USAGE);
	const reward = rewardConfig(args, base.reward);
	const rank = args.rank ?? base.lora.rank;
	const lora = {
		rank,
		alpha: args.alpha ?? (args.rank === undefined ? base.lora.alpha : 2 * rank)
	};
	return validateRecipe({
		...base,
		environment: env,
		baseModel,
		warmStart,
		sft,
		grpo,
		lora,
		seed: args.seed ?? base.seed,
		eval: {
			...base.eval,
			every: args.evalEvery ?? base.eval.every,
			games: args.evalGames ?? base.eval.games
		},
		maxNoSignal: args.maxNoSignal ?? base.maxNoSignal,
		...(args.changes === undefined
			? {}
			: { envOptions: { ...base.envOptions, changes: args.changes } }),
		...(reward ? { reward } : {})
	});
}

/** The run's reward: the saved (or preset) one with the flags given replacing its fields. */
function rewardConfig(args: TrainArgs, base: RewardConfig | undefined): RewardConfig | undefined {
	const judgeFlags = args.judgeBaseUrl ?? args.judgeModel ?? args.rubricText;
	const source = args.reward ?? base?.source ?? (judgeFlags !== undefined ? 'ruler' : undefined);
	if (!source) return undefined;
	if (source === 'env') {
		if (judgeFlags !== undefined)
			throw new UsageError(
				'--judge-base-url, --judge-model and --rubric are for --reward ruler or ruler+env',
				TRAIN_USAGE
			);
		return { source };
	}
	const baseURL = args.judgeBaseUrl ?? base?.judge?.baseURL;
	const model = args.judgeModel ?? base?.judge?.model;
	if (!baseURL || !model)
		throw new UsageError(
			`--reward ${source} needs --judge-base-url URL and --judge-model NAME (an OpenAI-compatible judge)`,
			TRAIN_USAGE
		);
	const rubric = args.rubricText ?? base?.rubric;
	return { source, judge: { baseURL, model }, ...(rubric !== undefined ? { rubric } : {}) };
}

/**
 * The recipe OUT/run.json keeps (undefined for a new run, or one saved without a recipe).
 * A run made under another root (the page's export, unzipped: its bundled model is
 * /models/tabrl-tiny/ on the site) is moved onto this checkout's static/ folder first, its
 * run.json rewritten to say so (rootBundled), with a warning.
 */
export async function savedRecipe(
	out: string,
	staticRoot = STATIC_ROOT
): Promise<Recipe | undefined> {
	const store = new NodeRunStore(out);
	const meta = await store.readMeta();
	if (!meta?.recipe) return undefined;
	let recipe: Recipe;
	try {
		recipe = validateRecipe(meta.recipe as Recipe);
	} catch (error) {
		throw new CliInputError(
			`--out: ${join(out, 'run.json')} holds a recipe this version cannot run ` +
				`(${(error as Error).message}); give another --out`
		);
	}
	const here = rootBundled(recipe, staticRoot);
	const moved = (from: string | undefined, to: string | undefined) =>
		from !== undefined && to !== undefined && from !== to && to.startsWith(staticRoot);
	if (
		!moved(meta.baseModel, here.baseModel) &&
		!moved(meta.warmStart?.adapter, here.warmStart?.adapter)
	)
		return recipe;
	const warm = here.warmStart;
	await store.writeMeta({
		...meta,
		recipe: here,
		baseModel: here.baseModel,
		...(warm ? { warmStart: { adapter: warm.adapter, mode: warm.mode ?? 'merged' } } : {})
	});
	process.stderr.write(
		`warning: ${out} was made with its bundled model at ${meta.baseModel}; it continues on ${here.baseModel}\n`
	);
	return here;
}

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
	const recipe = trainRecipe(args, STATIC_ROOT, await savedRecipe(out));
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
