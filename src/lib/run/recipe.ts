/**
 * @file A run's whole configuration, typed, with defaults: the *recipe* that the run loop
 * (run-loop.ts) executes, the page shows and the CLI takes as flags. Following the
 * TensorFlow Playground's rule, everything that decides a run is here, its seed included,
 * so a run can be repeated from its recipe alone (and, later, travel in a link).
 *
 * Phases, in order: an optional SFT warm start on the environment's demonstrations (inside
 * the run, trained on the same adapter), then GRPO. A shipped warm start (an adapter made
 * ahead of time by tools/make-warm-start.ts) is the other way to start from a policy
 * that plays legally: `warmStart`, merged into the base (a fresh adapter trains on top, its
 * KL reference the warm-start policy) or stacked (training continues the adapter).
 */
import {
	INVALID_REPLY_RULES,
	isInvalidReplyRule,
	type EnvOptions
} from '../agent/envs/environment';
import { ENVIRONMENT_NAMES, isEnvironmentName, type EnvironmentName } from '../agent/envs/registry';
import { isOpponentKind, OPPONENT_KINDS } from '../agent/envs/tictactoe/rollout';
import { isUpdateCount, MAX_UPDATE_COUNT } from '../grpo/train-step';
import type { WarmStartMode } from '../model/hf/warm-start';
import { RunError } from './errors';
import type { AutoSize } from './sizing';

export interface SftPhaseConfig {
	/** Demonstrations (games) to imitate, one pass per epoch. */
	games: number;
	/** Demonstrations per optimizer step. */
	batchSize: number;
	epochs: number;
	/** Linear decay from `learningRate` to `learningRateEnd` over all SFT steps. */
	learningRate: number;
	learningRateEnd: number;
	/** Seeds the demonstrations and their order. */
	seed: number;
	/** SFT steps per backend call: the run checks for Stop between chunks. */
	chunk: number;
	/**
	 * 2048 only: the share of the demonstrating player's moves made at random (the replies
	 * recorded stay the expert's: game2048/demonstrations.ts); absent or 0: the expert's games.
	 */
	explore?: number;
	/**
	 * inbox only: the expert reads the later email that changes the asked one whatever fact it
	 * changes (as a model must: a subject line does not say which fact moved), not only when
	 * it changes the asked fact (inbox/policies.ts); absent or false: as the shipped warm
	 * starts were made.
	 */
	readEveryChange?: boolean;
	/**
	 * tic-tac-toe only: the share of the demonstrating player's moves that are perfect
	 * (minimax; tictactoe/demonstrations.ts); absent or 0: random legal play, as the shipped
	 * warm start was made.
	 */
	skill?: number;
}

export interface GrpoPhaseConfig {
	/** GRPO steps to reach (counted after any SFT steps). */
	steps: number;
	/** Scenarios per step, and rollouts per scenario (the GRPO group). */
	groups: number;
	groupSize: number;
	learningRate: number;
	/**
	 * GRPO steps over which the learning rate rises linearly to `learningRate` (step k, 0-based,
	 * trains at (k + 1) / warmupSteps of it: warmupFactor); absent or 0: the full rate from the
	 * first. Why: Adam's first update moves every parameter by the whole rate (m / sqrt(v) is
	 * +-1), which at the page's rate sends a warm start's games illegal for a step.
	 */
	warmupSteps?: number;
	loss: 'cispo' | 'ppo';
	/** KL penalty to the LoRA-off model (the warm-start policy when merged); 0: none. */
	klBeta: number;
	/** Sampling temperature of the rollouts (the train step's logprobs use the same). */
	temperature: number;
	/** Reply tokens per turn at most. */
	maxTokens: number;
	/** Padded tokens per micro-batch of the update. */
	tokenBudget: number;
	/**
	 * Advantages divided by their group's reward std (ART's `scale_rewards`, the default)
	 * or not (false: r - mean, Dr. GRPO): unscaled, a group whose games differ only by a
	 * shaping term (a turn fewer) pushes as little as that term, not as hard as right vs wrong.
	 */
	scaleRewards?: boolean;
	/**
	 * Optimizer updates a step makes from its games: `iterations` passes over them, each in
	 * `miniBatches` updates (grpo/train-step.ts); absent: one update a step, as ART.
	 */
	iterations?: number;
	miniBatches?: number;
	/**
	 * Games per step sized to the device (sizing.ts): `groups` is where it starts, each step's
	 * time sets the next one's groups within these bounds. Absent: `groups` every step.
	 */
	autoSize?: AutoSize;
}

export interface EvalConfig {
	/** Evaluate every N GRPO steps (and before the first, and at the end); 0: never. */
	every: number;
	/** Games per evaluation, from fixed seeds (the same games every time). */
	games: number;
	/**
	 * Whether the first evaluation plays only as many of `games` as the device plays in
	 * evalSeconds (sizing.ts), the later ones as many. Absent: as the games per step are
	 * (`grpo.autoSize`). False: every one plays all `games`, as asked (`cli train --eval-games`).
	 */
	sized?: boolean;
	/**
	 * Whether the evaluation due at a step (before the first, every N) plays after the next
	 * step's games, before their update: it scores the same policy, and a visitor on a slow
	 * device sees games first instead of waiting on held-out ones. The last runs at the end.
	 */
	afterGames?: boolean;
	/** Temperatures to evaluate at: 0 is greedy (the headline, `val/reward`). */
	temperatures: number[];
	/**
	 * The environment's settings for evaluations, over the run's `envOptions` (absent: the
	 * run's): e.g. tic-tac-toe trained against a mixed opponent, measured against ART's random one.
	 */
	envOptions?: EnvOptions;
}

/** Where a trajectory's reward comes from: the game's own, RULER's score (ART), or their sum. */
export type RewardSource = 'env' | 'ruler' | 'ruler+env';
export const REWARD_SOURCES: readonly RewardSource[] = ['env', 'ruler', 'ruler+env'];

export interface RewardConfig {
	source: RewardSource;
	/**
	 * RULER's judge: an OpenAI-compatible endpoint and model. Its API key is never part of a
	 * recipe (recipes are saved with the run and travel in links): the caller hands it to the
	 * run (RunOptions.judgeApiKey).
	 */
	judge?: { baseURL: string; model: string };
	/** RULER's grading standards; absent: ART's default rubric. */
	rubric?: string;
}

export interface Recipe {
	environment: EnvironmentName;
	/**
	 * Training reward (absent: the environment's). Evaluations always score the environment's
	 * own reward, so a run trained on RULER is measured by the game's truth.
	 */
	reward?: RewardConfig;
	/** The environment's settings (absent: its defaults). */
	envOptions?: EnvOptions;
	/** The base model: a Hugging Face folder (Node) or URL prefix (browser). */
	baseModel: string;
	warmStart: { adapter: string; mode: WarmStartMode } | null;
	sft: SftPhaseConfig | null;
	grpo: GrpoPhaseConfig;
	lora: { rank: number; alpha: number };
	/** Seeds LoRA's initialisation, the scenarios and the sampling. */
	seed: number;
	eval: EvalConfig;
	/** Steps in a row with no reward spread before the run ends 'stuck'. */
	maxNoSignal: number;
	/** Prompt + reply tokens at most. */
	maxContext: number;
}

export const DEFAULT_SFT: SftPhaseConfig = {
	games: 16384,
	batchSize: 64,
	epochs: 1,
	learningRate: 1e-3,
	learningRateEnd: 1e-4,
	seed: 50,
	chunk: 16
};

/** Steps of the SFT phase (0 without one). */
export function sftSteps(recipe: Pick<Recipe, 'sft'>): number {
	const s = recipe.sft;
	return s ? s.epochs * Math.ceil(s.games / s.batchSize) : 0;
}

const isCount = (n: unknown, min = 1) => Number.isSafeInteger(n) && (n as number) >= min;
const isPositive = (n: unknown) => typeof n === 'number' && Number.isFinite(n) && n > 0;
const isNonNegative = (n: unknown) => typeof n === 'number' && Number.isFinite(n) && n >= 0;

/** Whether the run evaluates at GRPO step `grpoStep`: before the first, every `eval.every`-th
 * and the last (`grpo.steps`); never when `eval.every` is 0. */
export function evalDue(r: Pick<Recipe, 'eval' | 'grpo'>, grpoStep: number): boolean {
	const { every } = r.eval;
	return every > 0 && (grpoStep % every === 0 || grpoStep === r.grpo.steps);
}

/** Throws RunError('invalid-recipe') naming the first field out of range. */
export function validateRecipe(r: Recipe): Recipe {
	const bad = (field: string, value: unknown, want: string): never => {
		throw new RunError('invalid-recipe', `${field} must be ${want}, not ${JSON.stringify(value)}.`);
	};
	if (!isEnvironmentName(r.environment))
		bad('environment', r.environment, `one of ${ENVIRONMENT_NAMES.join(', ')}`);
	validateEnvOptions(r.envOptions ?? {}, 'envOptions', r.environment, bad);
	if (r.eval?.envOptions !== undefined)
		validateEnvOptions(r.eval.envOptions, 'eval.envOptions', r.environment, bad);
	if (r.reward) validateReward(r, bad);
	if (typeof r.baseModel !== 'string' || !r.baseModel.trim())
		bad('baseModel', r.baseModel, 'a model folder or URL');
	if (r.warmStart && (!r.warmStart.adapter || !['merged', 'stacked'].includes(r.warmStart.mode)))
		bad('warmStart', r.warmStart, "an adapter location with mode 'merged' or 'stacked'");
	const g = r.grpo;
	if (!isCount(g.steps, 0)) bad('grpo.steps', g.steps, 'an integer >= 0');
	if (!isCount(g.groups)) bad('grpo.groups', g.groups, 'an integer >= 1');
	if (!isCount(g.groupSize, 2)) bad('grpo.groupSize', g.groupSize, 'an integer >= 2');
	if (!isPositive(g.learningRate)) bad('grpo.learningRate', g.learningRate, 'a positive number');
	if (g.warmupSteps !== undefined && !isCount(g.warmupSteps, 0))
		bad('grpo.warmupSteps', g.warmupSteps, 'an integer >= 0');
	if (g.loss !== 'cispo' && g.loss !== 'ppo') bad('grpo.loss', g.loss, "'cispo' or 'ppo'");
	if (!isNonNegative(g.klBeta)) bad('grpo.klBeta', g.klBeta, 'a number >= 0');
	if (!isPositive(g.temperature)) bad('grpo.temperature', g.temperature, 'a positive number');
	if (!isCount(g.maxTokens)) bad('grpo.maxTokens', g.maxTokens, 'an integer >= 1');
	if (!isCount(g.tokenBudget)) bad('grpo.tokenBudget', g.tokenBudget, 'an integer >= 1');
	if (g.scaleRewards !== undefined && typeof g.scaleRewards !== 'boolean')
		bad('grpo.scaleRewards', g.scaleRewards, 'true or false');
	for (const field of ['iterations', 'miniBatches'] as const) {
		const n = g[field];
		if (n !== undefined && !isUpdateCount(n))
			bad(`grpo.${field}`, n, `an integer 1-${MAX_UPDATE_COUNT}`);
	}
	const auto = g.autoSize;
	if (
		auto !== undefined &&
		!(isCount(auto?.minGroups) && isCount(auto.maxGroups) && auto.minGroups <= auto.maxGroups)
	)
		bad('grpo.autoSize', auto, 'groups bounds {minGroups, maxGroups}, integers 1 <= min <= max');
	const aim = auto?.stepSeconds;
	if (aim !== undefined && !(isPositive(aim?.low) && isPositive(aim.high) && aim.low < aim.high))
		bad('grpo.autoSize.stepSeconds', aim, 'seconds {low, high}, positive, low < high');
	if (r.sft) {
		const s = r.sft;
		if (!isCount(s.games)) bad('sft.games', s.games, 'an integer >= 1');
		if (!isCount(s.batchSize)) bad('sft.batchSize', s.batchSize, 'an integer >= 1');
		if (!isCount(s.epochs)) bad('sft.epochs', s.epochs, 'an integer >= 1');
		if (!isPositive(s.learningRate)) bad('sft.learningRate', s.learningRate, 'a positive number');
		if (!isPositive(s.learningRateEnd))
			bad('sft.learningRateEnd', s.learningRateEnd, 'a positive number');
		if (!isCount(s.chunk)) bad('sft.chunk', s.chunk, 'an integer >= 1');
		if (s.explore !== undefined && s.explore !== 0) {
			if (r.environment !== '2048') bad('sft.explore', s.explore, '0 (only 2048 explores)');
			if (!(s.explore > 0 && s.explore < 1)) bad('sft.explore', s.explore, 'a number in [0, 1)');
		}
		if (s.skill !== undefined && s.skill !== 0) {
			if (r.environment !== 'tictactoe') bad('sft.skill', s.skill, '0 (only tictactoe has it)');
			if (!(s.skill > 0 && s.skill <= 1)) bad('sft.skill', s.skill, 'a number in [0, 1]');
		}
		if (s.readEveryChange !== undefined && s.readEveryChange !== false) {
			if (s.readEveryChange !== true)
				bad('sft.readEveryChange', s.readEveryChange, 'true or false');
			if (r.environment !== 'inbox')
				bad('sft.readEveryChange', s.readEveryChange, 'false (only inbox has changes)');
		}
		if (!Number.isSafeInteger(s.seed)) bad('sft.seed', s.seed, 'an integer');
	}
	if (!isCount(r.lora.rank)) bad('lora.rank', r.lora.rank, 'an integer >= 1');
	if (!isPositive(r.lora.alpha)) bad('lora.alpha', r.lora.alpha, 'a positive number');
	if (!Number.isSafeInteger(r.seed)) bad('seed', r.seed, 'an integer');
	if (!isCount(r.eval.every, 0)) bad('eval.every', r.eval.every, 'an integer >= 0');
	if (!isCount(r.eval.games)) bad('eval.games', r.eval.games, 'an integer >= 1');
	if (r.eval.sized !== undefined && typeof r.eval.sized !== 'boolean')
		bad('eval.sized', r.eval.sized, 'true or false');
	if (r.eval.afterGames !== undefined && typeof r.eval.afterGames !== 'boolean')
		bad('eval.afterGames', r.eval.afterGames, 'true or false');
	if (!r.eval.temperatures.every(isNonNegative))
		bad('eval.temperatures', r.eval.temperatures, 'numbers >= 0');
	// (the run loop numbers a step's retries within 16 rounds: run-loop.ts ROUNDS_PER_STEP)
	if (!isCount(r.maxNoSignal) || r.maxNoSignal > 16)
		bad('maxNoSignal', r.maxNoSignal, 'an integer from 1 to 16');
	if (!isCount(r.maxContext, 16)) bad('maxContext', r.maxContext, 'an integer >= 16');
	return r;
}

function validateReward(r: Recipe, bad: (field: string, value: unknown, want: string) => never) {
	const w = r.reward!;
	if (!REWARD_SOURCES.includes(w.source))
		bad('reward.source', w.source, `one of ${REWARD_SOURCES.join(', ')}`);
	if (w.source === 'env') return;
	const url = (() => {
		try {
			return new URL(w.judge?.baseURL ?? '');
		} catch {
			return null;
		}
	})();
	if (!url || !['http:', 'https:'].includes(url.protocol))
		bad(
			'reward.judge.baseURL',
			w.judge?.baseURL,
			"an http(s) URL of an OpenAI-compatible API (e.g. 'https://api.openai.com/v1')"
		);
	if (typeof w.judge?.model !== 'string' || !w.judge.model.trim())
		bad('reward.judge.model', w.judge?.model, "the judge model's name");
	if (w.rubric !== undefined && (typeof w.rubric !== 'string' || !w.rubric.trim()))
		bad('reward.rubric', w.rubric, 'a non-empty text (or absent: the default rubric)');
	// RULER judges one conversation per trajectory; a 2048 history window records each turn
	// as its own history (ART refuses such trajectories too)
	if (r.environment === '2048' && typeof r.envOptions?.historyTurns === 'number')
		bad(
			'envOptions.historyTurns',
			r.envOptions?.historyTurns,
			'null (the whole game as one conversation) when RULER judges 2048'
		);
}

/** Checks an environment's settings (a run's, or its evaluation's over them: `at`). */
function validateEnvOptions(
	o: EnvOptions,
	at: string,
	environment: EnvironmentName,
	bad: (field: string, value: unknown, want: string) => never
): void {
	if (typeof o !== 'object' || o === null) bad(at, o, 'an object of settings');
	if (
		o.winningValue !== undefined &&
		!(isCount(o.winningValue, 8) && (o.winningValue & (o.winningValue - 1)) === 0)
	)
		bad(`${at}.winningValue`, o.winningValue, 'a power of two >= 8');
	if (o.historyTurns !== undefined && o.historyTurns !== null && !isCount(o.historyTurns, 0))
		bad(`${at}.historyTurns`, o.historyTurns, 'an integer >= 0 or null (the whole game)');
	if (o.maxTurns !== undefined && !isCount(o.maxTurns))
		bad(`${at}.maxTurns`, o.maxTurns, 'an integer >= 1');
	if (
		o.changes !== undefined &&
		!(typeof o.changes === 'number' && o.changes >= 0 && o.changes <= 1)
	)
		bad(`${at}.changes`, o.changes, 'a share from 0 to 1');
	if (o.opponent !== undefined && !isOpponentKind(o.opponent))
		bad(`${at}.opponent`, o.opponent, `one of ${OPPONENT_KINDS.join(', ')}`);
	if (o.opponent !== undefined && environment !== 'tictactoe')
		bad(`${at}.opponent`, o.opponent, 'absent (only tictactoe has an opponent)');
	if (o.onInvalidReply !== undefined && !isInvalidReplyRule(o.onInvalidReply))
		bad(`${at}.onInvalidReply`, o.onInvalidReply, `one of ${INVALID_REPLY_RULES.join(', ')}`);
	if (o.onInvalidReply === 'random-move' && environment !== 'tictactoe' && environment !== '2048')
		bad(`${at}.onInvalidReply`, o.onInvalidReply, "'end' or absent (only games have moves)");
}
