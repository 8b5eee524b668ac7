/**
 * @file The recipes the page offers and `cli train --env` starts from: one per
 * environment, on the bundled tiny model (scripts/make-default-model.ts) with the warm start
 * shipped for it (static/warm-starts/, made by scripts/make-warm-start.ts). Locations are
 * relative to a root: the site's origin in the page ('/'), the `static/` folder in Node.
 *
 * Sizes are for a real GPU; `forSoftwareGpu` shrinks a recipe for a CPU-emulated one
 * (SwiftShader runs these kernels ~1000x slower), so a step there takes minutes, not hours.
 */
import { DEFAULT_SFT, type EnvironmentName, type Recipe } from './recipe';

/** Where the bundled model and its warm starts are, below the root. */
export const BUNDLED_MODEL = 'models/tabrl-tiny/';
export const warmStartPath = (env: EnvironmentName) => `warm-starts/tabrl-tiny/${env}/`;

export type PresetName = EnvironmentName;
export const PRESET_NAMES: readonly PresetName[] = ['tictactoe', 'letters'];
export const DEFAULT_PRESET: PresetName = 'tictactoe';

export const PRESET_TITLES: Record<PresetName, string> = {
	tictactoe: 'Tic-tac-toe (from a warm start)',
	letters: 'Letters a–m (from scratch)'
};

const join = (root: string, path: string) => (root.endsWith('/') ? root : `${root}/`) + path;

/**
 * The preset's recipe with locations under `root`. Tic-tac-toe is learn-tictactoe's
 * measured setup (BENCHMARKS.md: SFT-merged base, fresh r 64 adapter, KL 0.05 to the SFT
 * policy, lr 2e-4, T 1, cispo) at a tab's size: 8 x 8 games per step instead of 32 x 16.
 * Letters learns from the random model in a few steps (the CI learning test's task).
 */
export function preset(name: PresetName, root = '/'): Recipe {
	const common = {
		baseModel: join(root, BUNDLED_MODEL),
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
	return {
		...common,
		environment: 'tictactoe',
		warmStart: { adapter: join(root, warmStartPath('tictactoe')), mode: 'merged' },
		sft: null,
		grpo: {
			steps: 100,
			groups: 8,
			groupSize: 8,
			learningRate: 2e-4,
			loss: 'cispo',
			klBeta: 0.05,
			temperature: 1,
			maxTokens: 16,
			tokenBudget: 32768
		},
		lora: { rank: 64, alpha: 128 },
		eval: { every: 10, games: 64, temperatures: [0] }
	};
}

/** The SFT warm start of an environment, as scripts/make-warm-start.ts runs it. */
export function warmStartRecipe(name: PresetName, root: string): Recipe {
	const base = preset(name, root);
	return {
		...base,
		warmStart: null,
		sft: DEFAULT_SFT,
		grpo: { ...base.grpo, steps: 0 },
		lora: { rank: 64, alpha: 128 },
		seed: 7,
		eval: { every: 1, games: 200, temperatures: [0, 1] }
	};
}

/** A recipe shrunk for a software GPU: few games per step and per evaluation. */
export function forSoftwareGpu(recipe: Recipe): Recipe {
	const ttt = recipe.environment === 'tictactoe';
	return {
		...recipe,
		grpo: {
			...recipe.grpo,
			// tic-tac-toe: ~5 turns of prefill per game; letters: one 4-token reply, so a
			// group of 8 costs little and keeps a reward spread more often
			groups: ttt ? 1 : Math.min(recipe.grpo.groups, 2),
			groupSize: ttt ? 4 : Math.min(recipe.grpo.groupSize, 8),
			steps: Math.min(recipe.grpo.steps, 10)
		},
		lora: ttt ? { rank: 8, alpha: 16 } : recipe.lora,
		eval: { ...recipe.eval, every: 0 }
	};
}
