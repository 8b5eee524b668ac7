/**
 * @file Group-relative advantages, as ART computes them: A_i = (r_i - mean) / (std + 1e-6)
 * with the population std (scaleRewards, default) or r_i - mean (Dr. GRPO); zero
 * advantages are dropped. One difference: a group of equal rewards gets exactly 0 (r - mean
 * may be a rounding residue, ~1e-17, that ART would turn into a spurious ~1e-11).
 */
import { NonFiniteRewardError } from './errors';

/** Added to the std before dividing (ART's value): keeps a near-constant group finite. */
export const ADVANTAGE_STD_EPSILON = 1e-6;

export interface AdvantageOptions {
	/** Divide by the group's std (+ epsilon); default true (ART's and TRL's default). */
	scaleRewards?: boolean;
}

export interface GroupAdvantages {
	/** One per trajectory, in input order; 0 for a dropped one. */
	advantages: number[];
	/** Indices of the trajectories kept (advantage != 0), in input order. */
	kept: number[];
	/** How many were dropped for an advantage of exactly 0. */
	dropped: number;
	/** The group's mean reward and population std. */
	mean: number;
	std: number;
}

/** Advantages of one group from its rewards; NonFiniteRewardError on NaN or Inf. */
export function groupAdvantages(
	rewards: readonly number[],
	options: AdvantageOptions = {}
): GroupAdvantages {
	const scale = options.scaleRewards ?? true;
	rewards.forEach((r, i) => {
		if (!Number.isFinite(r)) throw new NonFiniteRewardError(i, r);
	});
	const n = rewards.length;
	if (n === 0) return { advantages: [], kept: [], dropped: 0, mean: 0, std: 0 };
	const mean = rewards.reduce((s, r) => s + r, 0) / n;
	const std = Math.sqrt(rewards.reduce((s, r) => s + (r - mean) ** 2, 0) / n);
	const constant = rewards.every((r) => r === rewards[0]);
	const advantages = rewards.map((r) => {
		if (constant) return 0;
		const a = r - mean;
		return scale ? a / (std + ADVANTAGE_STD_EPSILON) : a;
	});
	const kept = advantages.flatMap((a, i) => (a !== 0 ? [i] : []));
	return { advantages, kept, dropped: n - kept.length, mean, std };
}
