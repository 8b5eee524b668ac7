/**
 * @file The environments a recipe can name, behind one shape the run loop drives: a
 * scenario's rollouts for GRPO, demonstrations for an SFT warm start, and fixed evaluation
 * games. The games themselves live in src/lib/agent (tictactoe.ts, letters.ts); this file
 * only says how a run seeds and scores them.
 */
import type OpenAI from 'openai';
import { letters, tictactoe } from '../agent';
import * as game2048 from '../agent/envs/game2048';
import * as inbox from '../agent/envs/inbox';
import type { Policy } from '../agent/policy-client';
import type { ReplayItem } from '../agent/envs/replay';
import { legalPlayTranscripts } from '../agent/envs/tictactoe/demonstrations';
import { Trajectory } from '../agent/trajectory';
import { Rng } from '../util/random';
import type { EnvironmentName } from './recipe';

export interface RolloutRequest {
	model: string;
	/** The scenario (group) seed and the game's index within the group. */
	scenario: number;
	index: number;
	temperature: number;
	maxTokens: number;
	/** Sampling seed of the game's first request (null: unseeded). */
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
	/** inbox: model turns at most. */
	maxTurns?: number;
	/**
	 * inbox: the share (0..1) of emails whose fact a later email changes; a question about a
	 * changed fact needs both emails (default 0: every question needs one).
	 */
	changes?: number;
}

/** How one finished game went, in the terms every environment shares (play.ts). */
export interface GameOutcome {
	/** Absent for a game without wins. */
	won?: boolean;
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

export interface RunEnvironment {
	name: EnvironmentName;
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
		/** 2048: the share of moves played at random (recipe.ts SftPhaseConfig.explore). */
		explore?: number
	): Promise<Trajectory[]>;
	/** Numbers of an evaluation beyond the mean reward (e.g. the share of illegal moves). */
	evalMetrics(games: readonly Trajectory[]): Record<string, number>;
	outcome(game: Trajectory): GameOutcome;
	/** The scripted player of the game `request` sets up (its seed, its scenario). */
	scripted(kind: ScriptedPlayer, request: RolloutRequest): Policy;
	/** What the studio draws of a finished game (a pure function of the trajectory). */
	replay(game: Trajectory): ReplayItem[];
}

/** Seeds of the evaluation games: EVAL_SEED + i, disjoint from training scenarios. */
export const EVAL_SEED = 900_000_000;

const mean = (xs: readonly number[]) => xs.reduce((s, x) => s + x, 0) / Math.max(1, xs.length);

/** The mean of each named trajectory metric over the games (a missing one counts 0). */
const meanMetrics = (games: readonly Trajectory[], names: readonly string[]) =>
	Object.fromEntries(names.map((k) => [k, mean(games.map((t) => Number(t.metrics[k] ?? 0)))]));

const ticTacToe: RunEnvironment = {
	name: 'tictactoe',
	describe:
		'Tic-tac-toe against a random opponent: the board as text, the move as <move>B2</move>; win 1, draw 0.5, loss 0, an illegal move below 0.',
	rollout(client, r) {
		// A group shares the agent's mark; each game draws its own opponent moves (ART's
		// groups are independent games), so a near-deterministic policy keeps a spread.
		const draws = new Rng(r.scenario);
		const mark: tictactoe.Mark = draws.int(2) === 0 ? 'x' : 'o';
		let seed = draws.int(2 ** 31);
		for (let k = 0; k < r.index; k++) seed = draws.int(2 ** 31);
		return tictactoe.rollout(client, {
			model: r.model,
			seed,
			mark,
			maxTokens: r.maxTokens,
			signal: r.signal,
			request: {
				temperature: r.temperature,
				// rollout adds the turn to the seed: 16 apart leaves room for every turn
				...sampling(r)
			}
		});
	},
	demonstrations: async (count, seed) => legalPlayTranscripts(count, seed),
	outcome: (t) => ({
		won: t.metadata.outcome === 'win',
		moves: Number(t.metrics.num_moves ?? 0),
		illegal: t.metadata.outcome === 'illegal'
	}),
	// the warm start's demonstrations are legal random play: its expert and random coincide
	scripted: (_kind, r) => tictactoe.legalRandomPolicy(r.scenario * 64 + r.index),
	replay: (t) => tictactoe.replay(t),
	evalMetrics: (games) => ({
		illegal: mean(games.map((t) => (t.metadata.outcome === 'illegal' ? 1 : 0))),
		win: mean(games.map((t) => (t.metadata.outcome === 'win' ? 1 : 0))),
		score_x: mean(games.filter((t) => t.metadata.agent_symbol === 'x').map((t) => t.reward)),
		score_o: mean(games.filter((t) => t.metadata.agent_symbol === 'o').map((t) => t.reward))
	})
};

const lettersEnv: RunEnvironment = {
	name: 'letters',
	describe:
		"Say a word: the reward is the share of the reply's characters in a–m (random ≈ 0.1, learned ≈ 1).",
	async rollout(client, r) {
		r.signal?.throwIfAborted();
		return letters.rollout(client, {
			model: r.model,
			seed: r.samplingSeed ?? undefined,
			maxTokens: r.maxTokens,
			temperature: r.temperature,
			logprobs: r.logprobs
		});
	},
	evalMetrics: () => ({}),
	outcome: () => ({ moves: 1, illegal: false }),
	scripted: (kind, r) => {
		const rng = new Rng(r.scenario * 64 + r.index);
		// random: four random letters; expert: a word of a-m only (reward 1)
		const pool = kind === 'expert' ? 'abcdefghijklm' : 'abcdefghijklmnopqrstuvwxyz';
		return () => ({
			content: Array.from({ length: 4 }, () => pool[rng.int(pool.length)]).join('')
		});
	},
	replay: (t) => [
		{ kind: 'message', role: 'user', text: letters.PROMPT },
		{ kind: 'message', role: 'assistant', text: t.messages().at(-1)?.content?.toString() ?? '' },
		{ kind: 'outcome', text: 'share of a–m letters', reward: t.reward }
	]
};

/**
 * The sampling fields of a game's requests: the first turn's seed (the rollouts add the
 * turn), when seeded, and token logprobs when asked for.
 */
function sampling(r: RolloutRequest): { seed?: number; logprobs?: true } {
	return {
		...(r.samplingSeed === null ? {} : { seed: r.samplingSeed }),
		...(r.logprobs ? { logprobs: true } : {})
	};
}

/** The game seed of a 2048 or inbox rollout: each game of a group its own (as tic-tac-toe). */
const gameSeed = (r: RolloutRequest) =>
	r.index === 0 ? r.scenario : new Rng(r.scenario * 64 + r.index).int(2 ** 31);

const twenty48: RunEnvironment = {
	name: '2048',
	describe:
		"2048 as ART plays it: the board as text, the move as <move>left</move>; reaching the winning tile scores 2, otherwise a score of the largest tile and the board's sum; a malformed reply -1.",
	rollout: (client, r) =>
		game2048.rollout(client, {
			model: r.model,
			seed: gameSeed(r),
			winningValue: r.options.winningValue,
			historyTurns: r.options.historyTurns,
			maxTokens: r.maxTokens,
			signal: r.signal,
			request: { temperature: r.temperature, ...sampling(r) }
		}),
	// Each turn the model read is a conversation (one per turn with a history window).
	demonstrations: (count, seed, options, explore) =>
		game2048.demonstrationConversations(count, seed, { ...options, explore }),
	evalMetrics: (games) => ({
		...meanMetrics(games, ['win', 'max_value', 'num_moves']),
		invalid: mean(games.map((t) => (t.metadata.outcome === 'invalid' ? 1 : 0)))
	}),
	outcome: (t) => ({
		won: t.metadata.outcome === 'win',
		moves: Number(t.metrics.num_moves ?? 0),
		illegal: t.metadata.outcome === 'invalid'
	}),
	scripted: (kind, r) =>
		kind === 'expert' ? game2048.expertPolicy() : game2048.randomPolicy(gameSeed(r) ^ 0x2048),
	replay: (t) => game2048.replay(t)
};

const inboxEnv: RunEnvironment = {
	name: 'inbox',
	describe:
		'Answer a question about a generated mailbox with tools (search_inbox, read_email, return_final_answer), as ART-E: a right answer scores most, "I don\'t know" less, a wrong one less still, a malformed call least.',
	rollout: (client, r) =>
		inbox.rollout(client, {
			model: r.model,
			// a group answers one question (ART-E's groups share the scenario)
			seed: r.scenario,
			maxTurns: r.options.maxTurns,
			changes: r.options.changes,
			maxTokens: r.maxTokens,
			signal: r.signal,
			request: { temperature: r.temperature, ...sampling(r) }
		}),
	demonstrations: (count, seed, options) =>
		inbox.demonstrations(count, seed, { maxTurns: options.maxTurns, changes: options.changes }),
	evalMetrics: (games) =>
		meanMetrics(games, ['correct', 'format_error', 'tool_calls', 'cited_email']),
	outcome: (t) => ({
		moves: Number(t.metrics.num_turns ?? 0),
		illegal: Number(t.metrics.format_error ?? 0) === 1,
		correct: Number(t.metrics.correct ?? 0) === 1,
		toolCalls: Number(t.metrics.tool_calls ?? 0)
	}),
	scripted: (kind, r) =>
		kind === 'expert'
			? inbox.expertPolicy(inbox.scenario(r.scenario, { changes: r.options.changes }))
			: inbox.randomPolicy(r.scenario * 64 + r.index),
	replay: (t) => inbox.replay(t)
};

export const RUN_ENVIRONMENTS: Record<EnvironmentName, RunEnvironment> = {
	tictactoe: ticTacToe,
	'2048': twenty48,
	inbox: inboxEnv,
	letters: lettersEnv
};
