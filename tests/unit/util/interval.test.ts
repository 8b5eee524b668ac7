/** Wilson's interval against hand computations (tolerance 1e-4) and its edges. */
import { describe, expect, it } from 'vitest';
import { wilsonInterval } from '../../../src/lib/util/interval';

describe('wilsonInterval', () => {
	it('matches the hand computation: 0.56 of 200 is [0.4907, 0.6270]', () => {
		// center (0.56 + 1.9208/200) / (1 + 3.8416/200) = 0.55887; half 1.92306 * 0.035440 = 0.068153
		const [lo, hi] = wilsonInterval(0.56, 200);
		expect(lo).toBeCloseTo(0.4907, 4);
		expect(hi).toBeCloseTo(0.627, 4);
	});

	it('0.66 of 200 (2048 at step 0) is [0.5917, 0.7222]; 0.805 lies above it', () => {
		// center (0.66 + 0.009604) / 1.019208 = 0.65699; half 1.92306 * sqrt(0.001122 + 0.00002401) = 0.065113
		const [lo, hi] = wilsonInterval(0.66, 200);
		expect(lo).toBeCloseTo(0.5919, 3);
		expect(hi).toBeCloseTo(0.7221, 3);
		expect(0.805).toBeGreaterThan(hi);
	});

	it('stays inside [0, 1] at the edges and clamps a mean outside it', () => {
		const [lo0, hi0] = wilsonInterval(0, 10);
		expect(lo0).toBe(0);
		expect(hi0).toBeCloseTo(3.8416 / 13.8416, 6); // z^2 / (n + z^2) at p = 0
		const [lo1, hi1] = wilsonInterval(1, 10);
		expect(hi1).toBe(1);
		expect(lo1).toBeCloseTo(10 / 13.8416, 6);
		expect(wilsonInterval(-0.3, 10)).toEqual(wilsonInterval(0, 10));
	});

	it('narrows as n grows and refuses a bad n or p', () => {
		const w = (n: number) => {
			const [lo, hi] = wilsonInterval(0.5, n);
			return hi - lo;
		};
		expect(w(800)).toBeLessThan(w(200));
		expect(w(200)).toBeLessThan(w(50));
		expect(() => wilsonInterval(0.5, 0)).toThrow(RangeError);
		expect(() => wilsonInterval(0.5, 2.5)).toThrow(RangeError);
		expect(() => wilsonInterval(Number.NaN, 10)).toThrow(RangeError);
	});
});
