/**
 * @file The recipes the page offers and `cli train --env` starts from: one per
 * environment, on the bundled tiny model (scripts/make-default-model.ts) with the warm start
 * shipped for it (static/warm-starts/, made by tools/make-warm-start.ts). Locations are
 * relative to a root: the site's origin in the page ('/'), the `static/` folder in Node.
 *
 * Sizes are for a real GPU; `forSoftwareGpu` shrinks a recipe for a CPU-emulated one
 * (SwiftShader runs these kernels ~1000x slower), so a step there takes minutes, not hours.
 */
import { DEFAULT_SFT, type EnvironmentName, type Recipe } from './recipe';

/** The model of tic-tac-toe (and letters): the app's first bundled model. */
export const BUNDLED_MODEL = 'models/tabrl-tiny/';

/**
 * The bundled model of each environment (scripts/default-model.ts): one ~5M-parameter model
 * per family, its tokenizer learned from that environment's text.
 */
export const BUNDLED_MODEL_NAMES: Record<EnvironmentName, string> = {
	tictactoe: 'tabrl-tiny',
	'2048': 'tabrl-tiny-2048',
	inbox: 'tabrl-tiny-inbox',
	letters: 'tabrl-tiny'
};

/** Where an environment's bundled model and its warm start are, below the root. */
export const bundledModelPath = (env: EnvironmentName) => `models/${BUNDLED_MODEL_NAMES[env]}/`;
export const warmStartPath = (env: EnvironmentName) =>
	`warm-starts/${BUNDLED_MODEL_NAMES[env]}/${env}/`;

export type PresetName = EnvironmentName;
export const PRESET_NAMES: readonly PresetName[] = ['tictactoe', '2048', 'inbox', 'letters'];
export const DEFAULT_PRESET: PresetName = 'tictactoe';

export const PRESET_TITLES: Record<PresetName, string> = {
	tictactoe: 'Tic-tac-toe (from a warm start)',
	'2048': '2048 to 128 (from a warm start)',
	inbox: 'Inbox agent with tools (from a warm start)',
	letters: 'Letters a–m (from scratch)'
};

const join = (root: string, path: string) => (root.endsWith('/') ? root : `${root}/`) + path;

/**
 * The recipe with each location that is its environment's bundled model or shipped warm
 * start (whatever root it was under: `cli train`'s static/ folder, another site) moved under
 * `root`, so a run made elsewhere (an imported run) opens here. Other locations stay.
 */
export function rootBundled(recipe: Recipe, root: string): Recipe {
	const move = (location: string, path: string) => {
		const bare = (s: string) => s.replace(/\/+$/, '');
		const [l, p] = [bare(location), bare(path)];
		return l === p || l.endsWith(`/${p}`) ? join(root, path) : location;
	};
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
 * The preset's recipe with locations under `root`. Tic-tac-toe is learn-tictactoe's
 * measured setup (BENCHMARKS.md: SFT-merged base, fresh r 64 adapter, KL 0.05 to the SFT
 * policy, lr 2e-4, T 1, cispo) at a tab's size: 8 x 8 games per step instead of 32 x 16.
 * Letters learns from the random model in a few steps (the CI learning test's task).
 */
export function preset(name: PresetName, root = '/'): Recipe {
	const common = {
		baseModel: join(root, bundledModelPath(name)),
		seed: 1,
		maxNoSignal: 5,
		maxContext: 512
	};
	if (name === 'letters')
		return {
			...common,
			environment: 'letters',
			warmStart: null,
			sft: null,
			grpo: {
				steps: 20,
				groups: 4,
				groupSize: 8,
				// tabrl-tiny's LM head is scaled to reach logits of 40 (scripts/tictactoe-model.ts),
				// so its policy is sensitive: at 1e-3 and above (with or without KL) it collapses
				// to one reply (" tic tic tic tic", reward 0.5) within two steps; 2e-4 climbs
				// 0.07 -> 0.50 in 5 steps of 2 x 8 games with a spread left (SwiftShader, seed 1)
				learningRate: 2e-4,
				loss: 'cispo',
				klBeta: 0,
				temperature: 1,
				maxTokens: 4,
				tokenBudget: 8192
			},
			lora: { rank: 8, alpha: 16 },
			eval: { every: 5, games: 8, temperatures: [0] }
		};
	// The three games: the page's tic-tac-toe setup (from its warm start merged, a fresh
	// r 64 adapter, KL 0.05 to the warm-start policy, lr 2e-4, T 1, cispo), sized per game:
	// games per step are auto (sizing.ts), from `groups` within the game's bounds.
	const fromWarmStart = (
		environment: EnvironmentName,
		grpo: Pick<Recipe['grpo'], 'groups' | 'groupSize' | 'maxTokens' | 'tokenBudget' | 'autoSize'> &
			Partial<Recipe['grpo']>
	): Recipe => ({
		...common,
		environment,
		warmStart: { adapter: join(root, warmStartPath(environment)), mode: 'merged' },
		sft: null,
		grpo: {
			steps: 100,
			learningRate: 2e-4,
			loss: 'cispo',
			klBeta: 0.05,
			temperature: 1,
			...grpo
		},
		lora: { rank: 64, alpha: 128 },
		// at most 200 games: auto sizing plays as many as this device affords in EVAL_SECONDS
		eval: { every: 5, games: 200, temperatures: [0] }
	});
	if (name === '2048')
		return {
			// (a step of 4 x 8 games takes ~7 s on an H200: fewer groups would learn too little)
			...fromWarmStart('2048', {
				groups: 4,
				groupSize: 8,
				maxTokens: 16,
				tokenBudget: 32768,
				autoSize: { minGroups: 4, maxGroups: 32 }
			}),
			// ART's train.py plays to 128; the board alone each turn (2048 is Markov: the board
			// is the whole state), so a game of ~70 moves is ~70 short conversations
			envOptions: { winningValue: 128, historyTurns: 0 }
		};
	if (name === 'inbox')
		return {
			...fromWarmStart('inbox', {
				groups: 8,
				groupSize: 8,
				maxTokens: 96,
				tokenBudget: 65536,
				autoSize: { minGroups: 4, maxGroups: 32 }
			}),
			envOptions: { maxTurns: 6 },
			maxContext: 2048
		};
	// 64 x 8 games at lr 5e-4 reach +0.15 in 20 steps, 32 x 16 at 2e-4 in 25 (BENCHMARKS.md,
	// "Time to learn"): an H100 plays 512 games in ~2.7 s, so auto grows to 64 groups there
	return fromWarmStart('tictactoe', {
		groups: 8,
		groupSize: 8,
		maxTokens: 16,
		tokenBudget: 32768,
		learningRate: 5e-4,
		autoSize: { minGroups: 1, maxGroups: 64 }
	});
}

/**
 * The SFT phase of each environment's warm start. Tic-tac-toe's made the shipped adapter
 * (kept as it was). 2048 counts conversations, one per move (a game is ~85 of them), so
 * 131072 are ~1500 games; inbox's are whole episodes of ~3 tool calls.
 */
export const WARM_START_SFT: Partial<Record<PresetName, typeof DEFAULT_SFT>> = {
	tictactoe: DEFAULT_SFT,
	// DART: a quarter of the demonstrating moves played at random (replies the expert's), and
	// 4x the moves in batches of 128: greedy win 0.40 vs 0.025 for 32768 expert-only moves in
	// batches of 64 (BENCHMARKS.md, "Environments ...")
	'2048': { ...DEFAULT_SFT, games: 131072, batchSize: 128, explore: 0.25 },
	// 4x the episodes of the first inbox warm start (16384: greedy accuracy 0.765): 0.995
	// (BENCHMARKS.md, "Session 12")
	inbox: { ...DEFAULT_SFT, games: 65536, batchSize: 32 }
};

/** The SFT warm start of an environment, as tools/make-warm-start.ts runs it. */
export function warmStartRecipe(name: PresetName, root: string): Recipe {
	const base = preset(name, root);
	return {
		...base,
		warmStart: null,
		sft: WARM_START_SFT[name] ?? DEFAULT_SFT,
		grpo: { ...base.grpo, steps: 0 },
		lora: { rank: 64, alpha: 128 },
		seed: 7,
		eval: { every: 1, games: 200, temperatures: [0, 1] }
	};
}

/**
 * A recipe shrunk for a software GPU: few games per step, fixed (the fewest a preset plays
 * already takes minutes there), and no evaluations. Turn-based
 * games play one group of 4 (a turn costs seconds per sequence there); 2048 plays to 16, a
 * game of ~10 moves instead of ~85, and an inbox episode gets 4 turns.
 */
export function forSoftwareGpu(recipe: Recipe): Recipe {
	const env = recipe.environment;
	const small = env !== 'letters';
	const envOptions =
		env === '2048'
			? { ...recipe.envOptions, winningValue: 16 }
			: env === 'inbox'
				? { ...recipe.envOptions, maxTurns: 4 }
				: recipe.envOptions;
	const grpo = { ...recipe.grpo };
	delete grpo.autoSize;
	return {
		...recipe,
		...(envOptions ? { envOptions } : {}),
		grpo: {
			...grpo,
			// letters: one 4-token reply, so a group of 8 costs little and keeps a spread
			groups: small ? 1 : Math.min(recipe.grpo.groups, 2),
			groupSize: small ? 4 : Math.min(recipe.grpo.groupSize, 8),
			steps: Math.min(recipe.grpo.steps, 10)
		},
		lora: small ? { rank: 8, alpha: 16 } : recipe.lora,
		eval: { ...recipe.eval, every: 0 }
	};
}
