/**
 * @file One GRPO round of the run loop (run-loop.ts): the groups' rollouts through the
 * environment, each group scored as it completes (RULER's judge when the recipe says so), with
 * the events the page draws from ('rollout', 'group').
 */
import { gatherTrajectoryGroups } from '../agent/gather';
import {
	judgeFor,
	rulerScoreGroup,
	RULER_EXPLANATION,
	RULER_METRICS,
	type Judge
} from '../agent/ruler';
import { trajectoryToJson } from '../agent/jsonl';
import { groupAdvantages } from '../grpo/advantages';
import type { TrainableModel } from '../agent/model';
import type { TrajectoryGroup } from '../agent/trajectory';
import type { Environment } from '../agent/envs/environment';
import { samplingSeed, scenarioSeed } from '../agent/envs/seeds';
import type { RunEvent } from './events';
import type { Recipe } from './recipe';
import type { RunOptions } from './run-loop';

/** One round of GRPO rollouts: every group's games, scored (by RULER's judge when set). */
export async function playRound(
	env: Environment,
	client: ReturnType<TrainableModel['openaiClient']>,
	name: string,
	recipe: Recipe,
	round: number,
	step: number,
	emit: (e: RunEvent) => void,
	/** RULER's judge, scoring each group as it completes; null: the game's reward. */
	judge: Judge | null,
	signal?: AbortSignal
): Promise<{
	groups: TrajectoryGroup[];
	judged: Record<string, number>;
	/** Why the judge failed on a group of this round (the last such failure), or null. */
	judgeFailure: string | null;
}> {
	const g = recipe.grpo;
	const total = g.groups * g.groupSize;
	let done = 0;
	emit({ type: 'phase', phase: 'rollouts', step });
	const judgedGroups: TrajectoryGroup[] = [];
	let dropped = 0;
	let judgeFailure: string | null = null;
	const groups = await gatherTrajectoryGroups(
		Array.from({ length: g.groups }, (_, group) => {
			const scenario = scenarioSeed(recipe.seed, round, group);
			return Array.from({ length: g.groupSize }, (_, index) => async (inner: AbortSignal) => {
				const t = await env.rollout(client, {
					model: name,
					scenario,
					index,
					temperature: g.temperature,
					maxTokens: g.maxTokens,
					samplingSeed: samplingSeed(scenario, index),
					options: recipe.envOptions ?? {},
					// each token's text and logprob, for the page's view of the replies
					logprobs: true,
					signal: inner // aborted by gather when `signal` is
				});
				// A game that finishes after Stop (or after another failed) belongs to a dropped
				// round: not reported, so no rollout event follows the run's 'end'.
				if (inner.aborted) throw inner.reason;
				t.metadata.rollout_index = index; // (a game that failed leaves a gap in its group)
				done++;
				emit({
					type: 'rollout',
					step,
					round,
					group,
					index,
					done,
					total,
					reward: t.reward,
					trajectory: trajectoryToJson(t)
				});
				return t;
			});
		}),
		{
			signal,
			afterEach: (group: TrajectoryGroup, index: number) => {
				emit(groupEvent(step, round, index, group, g.scaleRewards));
				return undefined;
			},
			...(judge && {
				afterEach: async (group: TrajectoryGroup, index: number) => {
					const scored = await rulerScoreGroup(group, {
						judge,
						rubric: recipe.reward?.rubric,
						combine: recipe.reward?.source === 'ruler+env' ? 'ruler+env' : 'ruler',
						swallowExceptions: true,
						signal,
						onSwallowed: (error) => {
							judgeFailure = error instanceof Error ? error.message : String(error);
						}
					});
					if (scored) {
						judgedGroups.push(scored);
						emit(groupEvent(step, round, index, scored, g.scaleRewards));
					}
					return scored;
				},
				onDrop: () => dropped++
			})
		}
	);
	return { groups, judged: judge ? judgeMetrics(judgedGroups, dropped) : {}, judgeFailure };
}

/** A scored group's 'group' event: each game's reward, advantage and (RULER) judgement. */
function groupEvent(
	step: number,
	round: number,
	group: number,
	scored: TrajectoryGroup,
	scaleRewards = true
): RunEvent {
	const trajectories = scored.trajectories;
	const { advantages } = groupAdvantages(
		trajectories.map((t) => t.reward),
		{ scaleRewards }
	);
	return {
		type: 'group',
		step,
		round,
		group,
		games: trajectories.map((t, i) => {
			const score = t.metrics.ruler_score;
			const explanation = t.logs.find((l) => l.startsWith(RULER_EXPLANATION));
			return {
				index: Number(t.metadata.rollout_index ?? i),
				reward: t.reward,
				advantage: advantages[i],
				...(typeof score === 'number' ? { judgeScore: score } : {}),
				...(explanation ? { explanation: explanation.slice(RULER_EXPLANATION.length) } : {})
			};
		})
	};
}

/** The run's RULER judge (null when the recipe trains on the environment's reward). */
export function recipeJudge(recipe: Recipe, options: RunOptions): Judge | null {
	const reward = recipe.reward;
	if (!reward || reward.source === 'env') return null;
	return judgeFor(
		options.judge ?? {
			baseURL: reward.judge!.baseURL, // (validated: present for RULER)
			model: reward.judge!.model,
			apiKey: options.judgeApiKey
		}
	);
}

/**
 * A round's judging as step metrics: groups dropped (the judge failed on them: never
 * trained on), and the judge's latency, tokens and cost summed over the groups it scored.
 */
function judgeMetrics(groups: readonly TrajectoryGroup[], dropped: number): Record<string, number> {
	const out: Record<string, number> = { 'train/ruler_dropped_groups': dropped };
	for (const name of Object.values(RULER_METRICS)) {
		const values = groups.map((g) => g.metrics[name]).filter((v) => typeof v === 'number');
		if (values.length) out[`train/${name}`] = values.reduce((a, b) => a + (b as number), 0);
	}
	return out;
}
