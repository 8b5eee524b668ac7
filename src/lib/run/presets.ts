/**
 * @file The recipes the page offers and `cli train --env` starts from: one per
 * environment, built from the recipe defaults in its folder (agent/envs/<name>/
 * environment.ts: sizes, options, its bundled model and shipped warm start) over one shared
 * setup. Locations are relative to a root: the site's origin in the page ('/'), the
 * `static/` folder in Node.
 *
 * Sizes are for a real GPU; `forSoftwareGpu` shrinks a recipe for a CPU-emulated one
 * (SwiftShader runs these kernels ~1000x slower), so a step there takes minutes, not hours.
 */
import type { RecipeDefaults } from '../agent/envs/environment';
import { ENVIRONMENTS, ENVIRONMENT_NAMES, type EnvironmentName } from '../agent/envs/registry';
import { DEFAULT_SFT, type Recipe, type SftPhaseConfig } from './recipe';
import { withoutTrailingSlash } from '../util/location';

const defaults = (env: EnvironmentName): RecipeDefaults => ENVIRONMENTS[env].recipe;

/** Each environment's value of `pick`, by name (in the registry's order). */
const byName = <T>(pick: (env: EnvironmentName) => T): Record<EnvironmentName, T> =>
	Object.fromEntries(ENVIRONMENT_NAMES.map((env) => [env, pick(env)])) as Record<
		EnvironmentName,
		T
	>;

/** The model of tic-tac-toe (and letters): the app's first bundled model. */
export const BUNDLED_MODEL = 'models/tabrl-tiny/';

/**
 * The bundled model of each environment (scripts/default-model.ts): one ~5M-parameter model
 * per family, its tokenizer learned from that environment's text.
 */
export const BUNDLED_MODEL_NAMES: Record<EnvironmentName, string> = byName(
	(env) => defaults(env).bundledModel
);

/** Where an environment's bundled model and its warm start are, below the root. */
export const bundledModelPath = (env: EnvironmentName) => `models/${BUNDLED_MODEL_NAMES[env]}/`;
export const warmStartPath = (env: EnvironmentName) =>
	`warm-starts/${BUNDLED_MODEL_NAMES[env]}/${env}/`;

/** A preset per environment, named as it. */
export type PresetName = EnvironmentName;
export const PRESET_NAMES: readonly PresetName[] = ENVIRONMENT_NAMES;
export const DEFAULT_PRESET: PresetName = 'tictactoe';

export const PRESET_TITLES: Record<PresetName, string> = byName((env) => defaults(env).title);

/** Whether `location` is `path` below some root (trailing slashes aside). */
function endsWithPath(location: string, path: string): boolean {
	const [l, p] = [withoutTrailingSlash(location), withoutTrailingSlash(path)];
	return l === p || l.endsWith(`/${p}`);
}

const join = (root: string, path: string) => (root.endsWith('/') ? root : `${root}/`) + path;

/**
 * The recipe with each location that is its environment's bundled model or shipped warm
 * start (whatever root it was under: `cli train`'s static/ folder, another site) moved under
 * `root`, so a run made elsewhere (an imported run) opens here. Other locations stay.
 */
export function rootBundled(recipe: Recipe, root: string): Recipe {
	const move = (location: string, path: string) =>
		endsWithPath(location, path) ? join(root, path) : location;
	const env = recipe.environment;
	return {
		...recipe,
		baseModel: move(recipe.baseModel, bundledModelPath(env)),
		warmStart: recipe.warmStart && {
			...recipe.warmStart,
			adapter: move(recipe.warmStart.adapter, warmStartPath(env))
		}
	};
}

/**
 * The preset's recipe with locations under `root`: the environment's defaults over the
 * page's tic-tac-toe setup, the measured research one (BENCHMARKS.md: SFT-merged base,
 * a fresh r 64 adapter, KL 0.05 to the SFT policy, lr 2e-4, T 1, cispo), at a tab's size.
 */
export function preset(name: PresetName, root = '/'): Recipe {
	const d = defaults(name);
	const recipe: Recipe = {
		baseModel: join(root, bundledModelPath(name)),
		seed: 1,
		maxNoSignal: 5,
		maxContext: d.maxContext ?? 512,
		environment: name,
		warmStart: d.fromWarmStart
			? { adapter: join(root, warmStartPath(name)), mode: 'merged' }
			: null,
		sft: null,
		grpo: {
			steps: 100,
			learningRate: 2e-4,
			loss: 'cispo',
			klBeta: 0.05,
			temperature: 1,
			...d.grpo
		},
		lora: d.lora ?? { rank: 64, alpha: 128 },
		// at most 200 games: auto sizing plays as many as this device affords in evalSeconds
		eval: d.eval ?? { every: 5, games: 200, temperatures: [0] },
		...(d.envOptions ? { envOptions: d.envOptions } : {})
	};
	// (a copy: a caller may change its recipe, never the environment's defaults)
	return structuredClone(recipe);
}

/** LoRA and learning rate for a pretrained base: a small adapter, a gentle rate. */
export const PRETRAINED_SETUP = {
	lora: { rank: 8, alpha: 16 },
	learningRate: 5e-5,
	// the update's micro-batches: 4 x 1024 tokens recomputed take 0.9-2.4 GiB for the listed
	// models (run/memory-plan.ts), where the bundled model's 32768 would take tens
	tokenBudget: 4096
} as const;

/** Whether `baseModel` is the preset's bundled model (under any root). */
export const isBundledModel = (name: PresetName, baseModel: string): boolean =>
	endsWithPath(baseModel.trim(), bundledModelPath(name));

/**
 * The preset on another base model: its bundled model keeps the preset as it is; any other
 * (a Hub instruct model) starts with no warm start (the shipped ones fit the bundled model
 * only), the environment's ART-style system prompt and the model's own chat template, a
 * small LoRA (PRETRAINED_SETUP), room for a general tokenizer's longer replies, and auto
 * sizing free to play a single group a step.
 */
export function presetOn(name: PresetName, baseModel: string, root = '/'): Recipe {
	const recipe = preset(name, root);
	if (isBundledModel(name, baseModel)) return recipe;
	const { maxTokens, maxContext } = defaults(name).pretrained;
	return {
		...recipe,
		baseModel,
		warmStart: null,
		sft: null,
		lora: { ...PRETRAINED_SETUP.lora },
		grpo: {
			...recipe.grpo,
			learningRate: PRETRAINED_SETUP.learningRate,
			tokenBudget: PRETRAINED_SETUP.tokenBudget,
			maxTokens,
			// auto may go down to one group: a Hub model's 2048 step at the preset's floor of 4
			// groups took 44-104 s on an H100, far past the 12-20 s aim
			...(recipe.grpo.autoSize ? { autoSize: { ...recipe.grpo.autoSize, minGroups: 1 } } : {})
		},
		maxContext
	};
}

/**
 * The SFT phase of each environment's shipped warm start (the defaults' `warmStartSft` over
 * DEFAULT_SFT); environments without one are absent.
 */
export const WARM_START_SFT: Partial<Record<PresetName, SftPhaseConfig>> = Object.fromEntries(
	ENVIRONMENT_NAMES.flatMap((env) => {
		const sft = defaults(env).warmStartSft;
		return sft ? [[env, { ...DEFAULT_SFT, ...sft }]] : [];
	})
);

/** The SFT warm start of an environment, as tools/make-warm-start.ts runs it. */
export function warmStartRecipe(name: PresetName, root: string): Recipe {
	const base = preset(name, root);
	return {
		...base,
		warmStart: null,
		sft: { ...(WARM_START_SFT[name] ?? DEFAULT_SFT) },
		grpo: { ...base.grpo, steps: 0 },
		lora: { rank: 64, alpha: 128 },
		seed: 7,
		eval: { every: 1, games: 200, temperatures: [0, 1] }
	};
}

/**
 * A recipe shrunk for a software GPU: 10 steps at most, and the environment's `softwareGpu`
 * defaults: its games per step (set, or capped: the fewest a preset plays already takes
 * minutes there; never auto), its LoRA, its settings, its evaluation (its size fixed, each
 * played after the next step's games so a visitor sees games first).
 */
export function forSoftwareGpu(recipe: Recipe): Recipe {
	const shrink = defaults(recipe.environment).softwareGpu;
	const envOptions = shrink.envOptions
		? { ...recipe.envOptions, ...shrink.envOptions }
		: recipe.envOptions;
	const grpo = { ...recipe.grpo };
	delete grpo.autoSize;
	const games =
		'exactly' in shrink.games
			? shrink.games.exactly
			: {
					groups: Math.min(recipe.grpo.groups, shrink.games.atMost.groups),
					groupSize: Math.min(recipe.grpo.groupSize, shrink.games.atMost.groupSize)
				};
	return {
		...recipe,
		...(envOptions ? { envOptions } : {}),
		grpo: {
			...grpo,
			groups: games.groups,
			groupSize: games.groupSize,
			steps: Math.min(recipe.grpo.steps, 10)
		},
		lora: shrink.lora ? { ...shrink.lora } : recipe.lora,
		eval: { ...recipe.eval, ...shrink.eval, sized: false, afterGames: true }
	};
}

/** The environments that a software GPU shows learning within a few minutes, and what. */
export function learnsOnSoftwareGpu(): { name: EnvironmentName; what: string }[] {
	return ENVIRONMENT_NAMES.flatMap((name) => {
		const what = defaults(name).softwareGpu.learnsVisibly;
		return what ? [{ name, what }] : [];
	});
}
