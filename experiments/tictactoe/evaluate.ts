/**
 * @file Evaluation of a tic-tac-toe policy: `games` games against the random opponent from
 * fixed seeds (EVAL_SEED + i, disjoint from every training seed of learn-tictactoe.ts), the
 * same games for every checkpoint, played through the model's OpenAI client by
 * tictactoe.rollout. Score: the game's reward (win 1, draw 0.5, loss 0; an illegal move the
 * game's penalty, -1 + ln(n + 1) / ln(100), n the legal moves before it), averaged over all
 * games and over the games as X and as O; illegal moves are counted apart. Requests carry no
 * sampling seed: rollout sends the same request fields every turn, and the engine keys a
 * seeded sequence by (seed, choice index) with the token's index as the counter, so every
 * turn of a game would draw the same random numbers. T = 1 evaluations are therefore not
 * bit-reproducible (greedy ones are); all games' turns decode together in one batch.
 */
import type OpenAI from 'openai';
import { gatherTrajectoryGroups, tictactoe } from '../../src/lib/agent';
import type { Trajectory } from '../../src/lib/agent/trajectory';

/** Seeds of the evaluation games: EVAL_SEED + i. Training uses seeds below 100_000_000. */
export const EVAL_SEED = 900_000_000;

export interface SideScore {
	games: number;
	score: number;
}

export interface Evaluation {
	/** 'base', 'sft', 'grpo' or 'final'. */
	phase: string;
	/** The model's step (SFT steps included) and the GRPO steps done. */
	step: number;
	grpoStep: number;
	/** 0: greedy. */
	temperature: number;
	games: number;
	/** Mean reward over the games (illegal moves at their penalty). */
	score: number;
	wins: number;
	draws: number;
	losses: number;
	illegal: number;
	/** Rollouts that threw (not games; counted in nothing else). */
	errors: number;
	asX: SideScore;
	asO: SideScore;
	seconds: number;
}

export interface EvaluateOptions {
	games: number;
	temperature: number;
	maxTokens: number;
}

function side(games: readonly Trajectory[]): SideScore {
	const score = games.reduce((s, t) => s + t.reward, 0) / Math.max(1, games.length);
	return { games: games.length, score };
}

/** Plays the evaluation games; the caller fills phase and steps. */
export async function evaluate(
	client: OpenAI,
	model: string,
	o: EvaluateOptions
): Promise<Omit<Evaluation, 'phase' | 'step' | 'grpoStep'>> {
	const t0 = performance.now();
	const [group] = await gatherTrajectoryGroups(
		[
			Array.from(
				{ length: o.games },
				(_, i) => () =>
					tictactoe.rollout(client, {
						model,
						seed: EVAL_SEED + i,
						maxTokens: o.maxTokens,
						request: { temperature: o.temperature }
					})
			)
		],
		{ maxExceptions: o.games }
	);
	const games = group.trajectories;
	const count = (outcome: string) => games.filter((t) => t.metadata.outcome === outcome).length;
	return {
		temperature: o.temperature,
		games: games.length,
		score: side(games).score,
		wins: count('win'),
		draws: count('draw'),
		losses: count('loss'),
		illegal: count('illegal'),
		errors: group.exceptions.length,
		asX: side(games.filter((t) => t.metadata.agent_symbol === 'x')),
		asO: side(games.filter((t) => t.metadata.agent_symbol === 'o')),
		seconds: (performance.now() - t0) / 1000
	};
}

/** One line for the log. */
export function describeEvaluation(e: Evaluation): string {
	const t = e.temperature === 0 ? 'greedy' : `T=${e.temperature}`;
	return (
		`eval ${e.phase} (GRPO step ${e.grpoStep}) ${t}: score ${e.score.toFixed(3)} ` +
		`(X ${e.asX.score.toFixed(3)}, O ${e.asO.score.toFixed(3)}; W ${e.wins} D ${e.draws} ` +
		`L ${e.losses} illegal ${e.illegal}${e.errors ? ` errors ${e.errors}` : ''}) in ${e.seconds.toFixed(1)} s`
	);
}
