/**
 * @file Group-relative advantages (GRPO): each trajectory's reward against the other
 * trajectories that answered the same prompt.
 *
 *   A_i = (r_i - mean(r)) / (std(r) + 1e-6)     (scaleRewards, the default)
 *   A_i =  r_i - mean(r)                        (scaleRewards: false, as Dr. GRPO recommends)
 *
 * Definitions follow ART (OpenPipe/ART, src/art/preprocessing/tokenize.py,
 * `tokenize_trajectory_groups`): the mean over the group, the population standard
 * deviation (divide by n, not n - 1), epsilon 1e-6 added to the std, and trajectories whose
 * advantage is exactly 0 dropped (they carry no gradient and would only cost compute).
 * (TRL's GRPOTrainer differs: the sample std, n - 1, and epsilon 1e-4.)
 *
 * One deliberate difference: a group whose rewards are all equal gets advantages of exactly
 * 0 (all dropped). Computed literally, r - mean can be a rounding residue (three rewards of
 * 0.1 have mean 0.10000000000000002), which ART's formula would divide by ~1e-6 into a
 * spurious advantage of ~1e-11 instead of dropping the group.
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
