/**
 * @file An evaluation of the run loop (run-loop.ts): the fixed series of held-out games
 * (EVAL_SEED + i), its size found on the device on the first (sizing.ts) and kept after.
 */
import type { TrainableModel } from '../agent/model';
import type { Environment } from '../agent/envs/environment';
import { EVAL_SEED } from '../agent/envs/seeds';
import type { EvaluationReport } from './events';
import { playGames } from './play';
import type { Recipe } from './recipe';
import type { EnvOptions } from '../agent/envs/environment';
import { evalSeconds, sizedEvaluation } from './sizing';

const mean = (xs: readonly number[]) => xs.reduce((s, x) => s + x, 0) / Math.max(1, xs.length);

/** One evaluation: greedy (or at `temperature`) games of the fixed series EVAL_SEED + i. */
export async function evaluateOnce(
	env: Environment,
	client: ReturnType<TrainableModel['openaiClient']>,
	name: string,
	recipe: Recipe,
	/** `games` null: as many of recipe.eval.games as the device plays in evalSeconds. */
	{ temperature, games: count }: { temperature: number; games: number | null },
	step: number,
	signal?: AbortSignal,
	/** Games finished of those it may play (a sized one may stop short of `total`). */
	onProgress?: (done: number, total: number) => void
): Promise<EvaluationReport> {
	const t0 = performance.now();
	const total = count ?? recipe.eval.games;
	let done = 0;
	onProgress?.(0, total);
	const play = (from: number, games: number) =>
		playGames(env, client, name, {
			games,
			from,
			seed: EVAL_SEED,
			temperature,
			maxTokens: recipe.grpo.maxTokens,
			seeded: true,
			envOptions: evalEnvOptions(recipe),
			signal,
			onGame: () => onProgress?.(++done, total)
		});
	const games =
		count === null
			? await sizedEvaluation(play, recipe.eval.games, evalSeconds(recipe.grpo.autoSize))
			: await play(0, count);
	return {
		step,
		temperature,
		games: games.length,
		reward: mean(games.map((t) => t.reward)),
		metrics: env.evalMetrics(games),
		seconds: (performance.now() - t0) / 1000
	};
}

/** The settings an evaluation plays with: the run's, with its evaluation's over them. */
export function evalEnvOptions(recipe: Recipe): EnvOptions | undefined {
	const over = recipe.eval.envOptions;
	return over ? { ...recipe.envOptions, ...over } : recipe.envOptions;
}
