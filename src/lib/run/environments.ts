/**
 * @file The environments a recipe can name, behind one shape the run loop drives: a
 * scenario's rollouts for GRPO, demonstrations for an SFT warm start, and fixed evaluation
 * games. The games themselves live in src/lib/agent (tictactoe.ts, letters.ts); this file
 * only says how a run seeds and scores them.
 */
import type OpenAI from 'openai';
import { letters, tictactoe } from '../agent';
import type { Policy } from '../agent/policy-client';
import type { ReplayItem } from '../agent/replay';
import { legalPlayTranscripts } from '../agent/tictactoe-sft';
import type { Trajectory } from '../agent/trajectory';
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
	/** Conversations to imitate for an SFT warm start (absent: the environment has none). */
	demonstrations?(count: number, seed: number): Trajectory[];
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
				...(r.samplingSeed === null ? {} : { seed: r.samplingSeed })
			}
		});
	},
	demonstrations: (count, seed) => legalPlayTranscripts(count, seed),
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
			temperature: r.temperature
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

export const RUN_ENVIRONMENTS: Record<EnvironmentName, RunEnvironment> = {
	tictactoe: ticTacToe,
	letters: lettersEnv
};
