/**
 * @file The one shape every environment has, so the run loop, `cli play`, the page and the
 * presets drive any of them alike: a rollout for GRPO, scripted players (random and expert),
 * optional demonstrations for an SFT warm start, the numbers an evaluation reports, what the
 * studio draws of a finished game, and the recipe defaults its preset starts from.
 *
 * An environment is one folder (envs/<name>/) whose environment.ts exports an Environment;
 * registry.ts lists them. The defaults are plain data (this layer cannot import the run
 * layer's Recipe): run/presets.ts turns them into a recipe.
 */
import type OpenAI from 'openai';
import type { Policy } from '../policy-client';
import type { Trajectory } from '../trajectory';
import type { ReplayItem } from './replay';
import type { OpponentKind } from './tictactoe/rollout';

export interface RolloutRequest {
	model: string;
	/** The scenario (group) seed and the game's index within the group. */
	scenario: number;
	index: number;
	temperature: number;
	maxTokens: number;
	/** Sampling seed of the game's first request (null: unseeded; seeds.ts). */
	samplingSeed: number | null;
	/** The environment's own settings (e.g. 2048's winning value). */
	options: EnvOptions;
	/**
	 * Ask for each sampled token's text and logprob (OpenAI's `logprobs`), kept in the
	 * choices: the page colours the replies by them. Off: the choices' logprobs are null.
	 */
	logprobs?: boolean;
	signal?: AbortSignal;
}

/** Settings an environment reads from a recipe; each has the environment's default. */
export interface EnvOptions {
	/** 2048: the tile that wins (default 128, as ART's train.py). */
	winningValue?: number;
	/** 2048: earlier (board, move) turns resent with each board; null: all of them (ART). */
	historyTurns?: number | null;
	/** inbox: model turns at most; 2048: moves at most (none by default, as ART). */
	maxTurns?: number;
	/**
	 * inbox: the share (0..1) of emails whose fact a later email changes; a question about a
	 * changed fact needs both emails (default 0: every question needs one).
	 */
	changes?: number;
	/**
	 * tictactoe: the opponent, random (default, ART's), perfect (minimax: draws at best) or
	 * mixed (each move one or the other).
	 */
	opponent?: OpponentKind;
	/**
	 * tictactoe and 2048: what an invalid reply does: ends the game as a loss (default, ART's)
	 * or is replaced by a random legal move, the game going on. For timing stand-ins (random
	 * weights of a real shape): their games then last as long as a real model's.
	 */
	onInvalidReply?: InvalidReplyRule;
}

/** What an invalid reply does (EnvOptions.onInvalidReply). */
export const INVALID_REPLY_RULES = ['end', 'random-move'] as const;
export type InvalidReplyRule = (typeof INVALID_REPLY_RULES)[number];
export const isInvalidReplyRule = (x: unknown): x is InvalidReplyRule =>
	INVALID_REPLY_RULES.includes(x as InvalidReplyRule);

/** How one finished game went, in the terms every environment shares (run/play.ts). */
export interface GameOutcome {
	/** Absent for a game without wins. */
	won?: boolean;
	/** Ended in a draw (games that can be drawn only). */
	drawn?: boolean;
	/** The agent's moves (tool calls for an agent that uses tools). */
	moves: number;
	/** Ended by a reply the rules refuse (illegal move, malformed reply or call). */
	illegal: boolean;
	/** A question answered right (question answering only). */
	correct?: boolean;
	toolCalls?: number;
}

/** Who plays instead of a model: `cli play`'s baselines, and the demonstrations' author. */
export type ScriptedPlayer = 'random' | 'expert';

/**
 * What the environment's preset (run/presets.ts) starts from. Fields left out take the
 * shared setup there: the page's tic-tac-toe one (100 GRPO steps, lr 2e-4, cispo, KL 0.05,
 * T 1, a fresh r 64 adapter, an evaluation of 200 games every 5 steps, seed 1, 512 tokens).
 */
export interface RecipeDefaults {
	/** The preset's title in the page's menu. */
	title: string;
	/**
	 * The bundled model the preset trains (static/models/<name>/, made by
	 * scripts/default-model.ts): one per family of environments, its tokenizer learned
	 * from their text.
	 */
	bundledModel: string;
	/**
	 * Start from the warm start shipped for it (static/warm-starts/<model>/<env>/, merged
	 * into the base); false: from the bundled model itself.
	 */
	fromWarmStart: boolean;
	/** GRPO sizes: games per step (`autoSize`: bounds sized to the device), reply tokens. */
	grpo: {
		groups: number;
		groupSize: number;
		maxTokens: number;
		tokenBudget: number;
		steps?: number;
		learningRate?: number;
		/** GRPO steps over which the rate rises to learningRate (run/recipe.ts warmupSteps) */
		warmupSteps?: number;
		klBeta?: number;
		/** (stepSeconds: the step time auto keeps to, where not run/sizing.ts's 2-4 s) */
		autoSize?: {
			minGroups: number;
			maxGroups: number;
			stepSeconds?: { low: number; high: number };
		};
	};
	lora?: { rank: number; alpha: number };
	eval?: { every: number; games: number; temperatures: number[] };
	envOptions?: EnvOptions;
	/** Prompt + reply tokens at most. */
	maxContext?: number;
	/**
	 * The SFT phase that made the shipped warm start (tools/make-warm-start.ts), as changes
	 * to the default SFT phase (run/recipe.ts DEFAULT_SFT); absent: none is shipped.
	 */
	warmStartSft?: { games?: number; batchSize?: number; explore?: number; skill?: number };
	/**
	 * A pretrained instruct model (from the Hub) in place of the bundled one: no warm start,
	 * the system prompt and the model's own chat template do the rest (as ART). Replies and
	 * prompts in a general tokenizer's tokens are longer than in the bundled model's.
	 */
	pretrained: { maxTokens: number; maxContext: number };
	/**
	 * How a software (CPU-emulated) GPU shrinks the preset, where a step must take minutes,
	 * not hours: games per step set exactly or capped, a smaller LoRA, settings that keep a
	 * reward spread, the evaluation it affords (played after the next step's games, so they
	 * show first: run/recipe.ts `eval.afterGames`).
	 * `learnsVisibly`: what a visitor sees it learn there within a few minutes (the page
	 * proposes such an environment when another is chosen).
	 */
	softwareGpu: {
		games:
			| { exactly: { groups: number; groupSize: number } }
			| { atMost: { groups: number; groupSize: number } };
		lora?: { rank: number; alpha: number };
		envOptions?: EnvOptions;
		eval: { every: number; games: number };
		/** What the settings change there, in words for the page (absent: only sizes). */
		scaled?: string;
		learnsVisibly?: string;
	};
}

export interface Environment<Name extends string = string> {
	/** The name recipes, flags and links use; the registry's key. */
	name: Name;
	/** One line for people: what the agent does and how it is rewarded. */
	describe: string;
	rollout(client: OpenAI, request: RolloutRequest): Promise<Trajectory>;
	/**
	 * `count` conversations to imitate for an SFT warm start, each as the model reads it (a
	 * game sent turn by turn gives one per turn); absent: the environment has none.
	 */
	demonstrations?(
		count: number,
		seed: number,
		options: EnvOptions,
		/** How the demonstrating player plays (run/recipe.ts SftPhaseConfig explore,
		 * readEveryChange, skill). */
		style?: { explore?: number; readEveryChange?: boolean; skill?: number }
	): Promise<Trajectory[]>;
	/** Numbers of an evaluation beyond the mean reward (e.g. the share of illegal moves). */
	evalMetrics(games: readonly Trajectory[]): Record<string, number>;
	outcome(game: Trajectory): GameOutcome;
	/** The scripted player of the game `request` sets up (its seed, its scenario). */
	scripted(kind: ScriptedPlayer, request: RolloutRequest): Policy;
	/** What the studio draws of a finished game (a pure function of the trajectory). */
	replay(game: Trajectory): ReplayItem[];
	recipe: RecipeDefaults;
}

/** The mean of `xs` (0 for none): evaluation metrics are means over the games. */
export const mean = (xs: readonly number[]) =>
	xs.reduce((s, x) => s + x, 0) / Math.max(1, xs.length);

/** The mean of each named trajectory metric over the games (a missing one counts 0). */
export const meanMetrics = (games: readonly Trajectory[], names: readonly string[]) =>
	Object.fromEntries(names.map((k) => [k, mean(games.map((t) => Number(t.metrics[k] ?? 0)))]));

/**
 * The sampling fields of a game's requests: the first turn's seed (the rollouts add the
 * turn), when seeded, and token logprobs when asked for.
 */
export function sampling(r: RolloutRequest): { seed?: number; logprobs?: true } {
	return {
		...(r.samplingSeed === null ? {} : { seed: r.samplingSeed }),
		...(r.logprobs ? { logprobs: true } : {})
	};
}
