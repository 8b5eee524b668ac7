/**
 * @file Games played without training: the fixed evaluation games of a run and `cli play`'s
 * baselines. `playGames` plays scenarios `seed + i` (one game each, all concurrent, so a
 * model's requests batch) with any OpenAI client, or with a scripted player built per game;
 * `summarizeGames` turns the finished games into the numbers every environment reports
 * (win rate where the game has wins, mean reward, moves, illegal replies; for a question
 * answering agent its accuracy and tool calls).
 */
import type OpenAI from 'openai';
import { gatherTrajectoryGroups } from '../agent/gather';
import type { Trajectory } from '../agent/trajectory';
import type { EnvOptions, Environment, RolloutRequest } from '../agent/envs/environment';
import type { EnvironmentName } from '../agent/envs/registry';
import { samplingSeed } from '../agent/envs/seeds';

export interface PlayOptions {
	games: number;
	/** Game i plays scenario seed + i. */
	seed: number;
	/** The first game's i (default 0): a later batch of the same series of games. */
	from?: number;
	/** 0: greedy. */
	temperature: number;
	maxTokens: number;
	/** Sampled games are seeded from (i, turn), so reproducible; greedy needs none. */
	seeded?: boolean;
	envOptions?: EnvOptions;
	signal?: AbortSignal;
	/** Called as each game ends. */
	onGame?: (game: Trajectory, index: number) => void;
}

/** The client of game i: one shared (a model's) or one per game (a scripted player's). */
export type ClientFor = OpenAI | ((request: RolloutRequest) => OpenAI);

export async function playGames(
	env: Environment,
	clientFor: ClientFor,
	model: string,
	o: PlayOptions
): Promise<Trajectory[]> {
	const [group] = await gatherTrajectoryGroups(
		[
			Array.from({ length: o.games }, (_, k) => async (inner: AbortSignal) => {
				const i = (o.from ?? 0) + k;
				const request: RolloutRequest = {
					model,
					scenario: o.seed + i,
					index: 0,
					temperature: o.temperature,
					maxTokens: o.maxTokens,
					samplingSeed: o.seeded && o.temperature > 0 ? samplingSeed(i, 0) : null,
					options: o.envOptions ?? {},
					signal: inner // aborted by gather when `signal` is
				};
				const client = typeof clientFor === 'function' ? clientFor(request) : clientFor;
				const game = await env.rollout(client, request);
				o.onGame?.(game, k);
				return game;
			})
		],
		{ signal: o.signal, maxExceptions: 0 }
	);
	return group.trajectories;
}

/** `cli play`'s numbers; fields a game does not have are absent. */
export interface PlaySummary {
	env: EnvironmentName;
	games: number;
	win_rate?: number;
	draw_rate?: number;
	mean_reward: number;
	mean_moves: number;
	illegal_rate: number;
	accuracy?: number;
	mean_tool_calls?: number;
}

const mean = (xs: readonly number[]) => xs.reduce((s, x) => s + x, 0) / Math.max(1, xs.length);

export function summarizeGames(
	env: Environment<EnvironmentName>,
	games: readonly Trajectory[]
): PlaySummary {
	const outcomes = games.map((g) => env.outcome(g));
	const summary: PlaySummary = {
		env: env.name,
		games: games.length,
		mean_reward: mean(games.map((g) => g.reward)),
		mean_moves: mean(outcomes.map((o) => o.moves)),
		illegal_rate: mean(outcomes.map((o) => (o.illegal ? 1 : 0)))
	};
	const share = (pick: (o: (typeof outcomes)[number]) => boolean | undefined) =>
		outcomes.some((o) => pick(o) !== undefined)
			? mean(outcomes.map((o) => (pick(o) ? 1 : 0)))
			: undefined;
	const winRate = share((o) => o.won);
	if (winRate !== undefined) summary.win_rate = winRate;
	const drawRate = share((o) => o.drawn);
	if (drawRate !== undefined) summary.draw_rate = drawRate;
	const accuracy = share((o) => o.correct);
	if (accuracy !== undefined) summary.accuracy = accuracy;
	if (outcomes.some((o) => o.toolCalls !== undefined))
		summary.mean_tool_calls = mean(outcomes.map((o) => o.toolCalls ?? 0));
	return summary;
}
