/**
 * @file `cli train`'s recipe: the run's saved recipe (OUT/run.json, moved onto this
 * checkout's static/ when made under another root) or the environment's preset, with each
 * flag given replacing its field, locations made absolute.
 */
import { join, resolve } from 'node:path';
import { NodeRunStore } from '../../src/lib/grpo/store/node/run-store';
import { sameLocation } from '../../src/lib/agent/backend/run-open';
import {
	bundledModelPath,
	DEFAULT_PRESET,
	DEFAULT_SFT,
	ENVIRONMENTS,
	PRESET_NAMES,
	preset,
	presetOn,
	recordedSettings,
	rootBundled,
	sizedGrpo,
	validateRecipe,
	warmStartPath,
	type PresetName,
	type Recipe,
	type RewardConfig
} from '../../src/lib/run';
import { CliInputError, UsageError } from './args';
import { STATIC_ROOT } from './static-root';
import { TRAIN_USAGE, type TrainArgs } from './train-args';

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
	const baseModel = resolve(args.model ?? saved?.baseModel ?? preset(env, staticRoot).baseModel);
	// another base than the bundled one: no shipped warm start, a pretrained model's setup
	const base = saved ?? presetOn(env, baseModel, staticRoot);
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
		...(args.warmup === undefined ? {} : { warmupSteps: args.warmup }),
		loss: args.loss ?? g.loss,
		klBeta: args.klBeta ?? g.klBeta,
		temperature: args.temperature ?? g.temperature,
		maxTokens: args.maxTokens ?? g.maxTokens,
		tokenBudget: args.tokenBudget ?? g.tokenBudget,
		...(args.scaleRewards === undefined ? {} : { scaleRewards: args.scaleRewards }),
		...(args.iterations === undefined ? {} : { iterations: args.iterations }),
		...(args.miniBatches === undefined ? {} : { miniBatches: args.miniBatches })
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
	if (args.opponent !== undefined && env !== 'tictactoe')
		throw new UsageError(`--opponent: only for --env tictactoe, not ${env}`, TRAIN_USAGE);
	if (args.onInvalidReply === 'random-move' && env !== 'tictactoe' && env !== '2048')
		throw new UsageError(
			`--on-invalid-reply: random-move only for --env tictactoe or 2048, not ${env}`,
			TRAIN_USAGE
		);
	const envOptions = {
		...base.envOptions,
		...(args.changes === undefined ? {} : { changes: args.changes }),
		...(args.opponent === undefined ? {} : { opponent: args.opponent }),
		...(args.onInvalidReply === undefined ? {} : { onInvalidReply: args.onInvalidReply })
	};
	// trained against another opponent or rule, still measured by ART's
	const evalEnvOptions = {
		...base.eval.envOptions,
		...(args.opponent === undefined ? {} : { opponent: 'random' as const }),
		...(args.onInvalidReply === undefined ? {} : { onInvalidReply: 'end' as const })
	};
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
			games: args.evalGames ?? base.eval.games,
			// games asked for are played, every evaluation, on any device
			...(args.evalGames === undefined ? {} : { sized: false }),
			...(args.opponent === undefined && args.onInvalidReply === undefined
				? {}
				: { envOptions: evalEnvOptions })
		},
		maxNoSignal: args.maxNoSignal ?? base.maxNoSignal,
		...(Object.keys(envOptions).length > 0 ? { envOptions } : {}),
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
 * run.json rewritten to say so (rootBundled), with a warning. The learning rate, KL β and
 * temperature its last trained step recorded (changed while the page paused it) are what it
 * goes on with, as the page's Resume does; flags still replace them (trainRecipe).
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
	// (run.json keeps the recipe as it was given; the live settings are the history's)
	const live = recordedSettings(await store.readHistory());
	const goOn = (r: Recipe): Recipe =>
		Object.keys(live).length ? { ...r, grpo: { ...r.grpo, ...live } } : r;
	const here = rootBundled(recipe, staticRoot);
	const moved = (from: string | undefined, to: string | undefined) =>
		from !== undefined && to !== undefined && !sameLocation(from, to) && to.startsWith(staticRoot);
	if (
		!moved(meta.baseModel, here.baseModel) &&
		!moved(meta.warmStart?.adapter, here.warmStart?.adapter)
	)
		return goOn(recipe);
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
	return goOn(here);
}
