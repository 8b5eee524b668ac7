/**
 * Group-relative advantages against hand computations (ART's definition: population std,
 * epsilon 1e-6 added to the std, zero advantages dropped).
 */
import { describe, expect, it } from 'vitest';
import { ADVANTAGE_STD_EPSILON, groupAdvantages } from '../../../src/lib/grpo/advantages';
import { GrpoError, NonFiniteRewardError } from '../../../src/lib/grpo/errors';

describe('groupAdvantages', () => {
	it('mean-centres and divides by the population std + 1e-6', () => {
		// rewards 1, 0, 0, 1: mean 0.5; deviations +-0.5; population std sqrt(4 * 0.25 / 4) = 0.5
		// (the sample std, sqrt(1 / 3) = 0.577, would give +-0.866 instead).
		const g = groupAdvantages([1, 0, 0, 1]);
		const a = 0.5 / (0.5 + 1e-6); // 0.999998000004 (1 / (1 + 2e-6) = 1 - 2e-6 + 4e-12 - ...)
		expect(g.mean).toBe(0.5);
		expect(g.std).toBe(0.5);
		expect(g.advantages).toEqual([a, -a, -a, a]);
		expect(a).toBeCloseTo(0.999998000004, 15);
		expect(g.kept).toEqual([0, 1, 2, 3]);
		expect(g.dropped).toBe(0);
		expect(ADVANTAGE_STD_EPSILON).toBe(1e-6);
	});

	it('scaleRewards: false only mean-centres', () => {
		// rewards 3, 1, 2: mean 2 -> 1, -1, 0; the last is dropped.
		const g = groupAdvantages([3, 1, 2], { scaleRewards: false });
		expect(g.advantages).toEqual([1, -1, 0]);
		expect(g.kept).toEqual([0, 1]);
		expect(g.dropped).toBe(1);
	});

	it('drops a trajectory whose reward equals the mean', () => {
		// 0, 0.5, 1: mean 0.5, std sqrt((0.25 + 0 + 0.25) / 3) = sqrt(1/6) = 0.408248...
		const g = groupAdvantages([0, 0.5, 1]);
		const s = Math.sqrt(1 / 6);
		expect(g.std).toBeCloseTo(s, 15);
		expect(g.advantages[0]).toBeCloseTo(-0.5 / (s + 1e-6), 14);
		expect(g.advantages[1]).toBe(0);
		expect(g.advantages[2]).toBeCloseTo(0.5 / (s + 1e-6), 14);
		expect(g.kept).toEqual([0, 2]);
	});

	it('a group with zero variance contributes nothing, even where rounding says otherwise', () => {
		// 0.1 + 0.1 + 0.1 = 0.30000000000000004, so the literal mean is not 0.1 and
		// (r - mean) / (std + 1e-6) would be ~ -1e-11, not 0.
		const rewards = [0.1, 0.1, 0.1];
		const mean = rewards.reduce((s, r) => s + r, 0) / 3;
		expect(0.1 - mean).not.toBe(0);
		for (const scaleRewards of [true, false]) {
			const g = groupAdvantages(rewards, { scaleRewards });
			expect(g.advantages).toEqual([0, 0, 0]);
			expect(g.kept).toEqual([]);
			expect(g.dropped).toBe(3);
		}
		expect(groupAdvantages([1]).kept).toEqual([]);
	});

	it('an empty group is empty', () => {
		expect(groupAdvantages([])).toEqual({ advantages: [], kept: [], dropped: 0, mean: 0, std: 0 });
	});

	it('NaN and infinite rewards are typed errors naming the trajectory', () => {
		for (const bad of [NaN, Infinity, -Infinity]) {
			let caught: unknown;
			try {
				groupAdvantages([0, 1, bad]);
			} catch (e) {
				caught = e;
			}
			expect(caught).toBeInstanceOf(NonFiniteRewardError);
			expect(caught).toBeInstanceOf(GrpoError);
			expect((caught as NonFiniteRewardError).kind).toBe('non-finite-reward');
			expect((caught as NonFiniteRewardError).index).toBe(2);
		}
	});
});
