/**
 * @file The environments a recipe can name, behind one shape the run loop drives: a
 * scenario's rollouts for GRPO, demonstrations for an SFT warm start, and fixed evaluation
 * games. The games themselves live in src/lib/agent (tictactoe.ts, letters.ts); this file
 * only says how a run seeds and scores them.
 */
import type OpenAI from 'openai';
import { letters, tictactoe } from '../agent';
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
	signal?: AbortSignal;
}

export interface RunEnvironment {
	name: EnvironmentName;
	/** One line for people: what the agent does and how it is rewarded. */
	describe: string;
	rollout(client: OpenAI, request: RolloutRequest): Promise<Trajectory>;
	/** Conversations to imitate for an SFT warm start (absent: the environment has none). */
	demonstrations?(count: number, seed: number): Trajectory[];
	/** Numbers of an evaluation beyond the mean reward (e.g. the share of illegal moves). */
	evalMetrics(games: readonly Trajectory[]): Record<string, number>;
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
	evalMetrics: () => ({})
};

export const RUN_ENVIRONMENTS: Record<EnvironmentName, RunEnvironment> = {
	tictactoe: ticTacToe,
	letters: lettersEnv
};
