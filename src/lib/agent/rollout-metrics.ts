/**
 * @file The numbers a step logs about its rollouts, under ART's `split/name` keys: the mean
 * reward and its spread, every trajectory metric averaged (booleans as 0/1), how many
 * groups, trajectories and captured exceptions there were, and (for training) the mean
 * within-group std, which says how much signal GRPO had.
 */
import type { Trajectory, TrajectoryGroup } from './trajectory';

const mean = (xs: readonly number[]) =>
	xs.length ? xs.reduce((s, x) => s + x, 0) / xs.length : NaN;
const std = (xs: readonly number[]) => {
	const m = mean(xs);
	return Math.sqrt(mean(xs.map((x) => (x - m) ** 2)));
};

export function trajectoryMetrics(
	trajectories: readonly Trajectory[],
	split: string
): Record<string, number> {
	const out: Record<string, number> = {};
	const rewards = trajectories.map((t) => t.reward);
	out[`${split}/reward`] = mean(rewards);
	out[`${split}/reward_std_dev`] = std(rewards);
	out[`${split}/trajectories`] = trajectories.length;
	const sums = new Map<string, number[]>();
	for (const t of trajectories)
		for (const [k, v] of Object.entries(t.metrics)) {
			const list = sums.get(k) ?? [];
			list.push(typeof v === 'boolean' ? Number(v) : v);
			sums.set(k, list);
		}
	for (const [k, list] of sums) out[`${split}/${k}`] = mean(list);
	return out;
}

export function groupMetrics(
	groups: readonly TrajectoryGroup[],
	split: string
): Record<string, number> {
	const out = trajectoryMetrics(
		groups.flatMap((g) => g.trajectories),
		split
	);
	out[`${split}/groups`] = groups.length;
	out[`${split}/exceptions`] = groups.reduce((s, g) => s + g.exceptions.length, 0);
	const spreads = groups
		.filter((g) => g.trajectories.length > 0)
		.map((g) => std(g.trajectories.map((t) => t.reward)));
	out[`${split}/group_reward_std_dev`] = mean(spreads);
	return out;
}
