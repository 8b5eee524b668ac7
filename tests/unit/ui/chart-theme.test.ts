/**
 * The charts' y tick labels (ui/chart-theme.ts tickLabel): short, and negative values keep a
 * visible minus sign (a fixed-width axis once cut it off the loss chart's ticks).
 */
import { describe, expect, it } from 'vitest';
import { tickLabel } from '../../../src/lib/ui/chart-theme';

describe('tickLabel', () => {
	it('writes negatives with a real minus sign, tiny values as exponents, large ones in thousands', () => {
		expect(tickLabel(0)).toBe('0');
		expect(tickLabel(-0.5)).toBe('−0.5');
		expect(tickLabel(-0.0004)).toBe('−4e−4');
		expect(tickLabel(0.0025)).toBe('2.5e−3');
		expect(tickLabel(0.30000000000000004)).toBe('0.3');
		expect(tickLabel(-2)).toBe('−2');
		expect(tickLabel(12345)).toBe('12.3k');
		expect(tickLabel(Number.NaN)).toBe('');
	});

	it('keeps neighbouring ticks apart', () => {
		const ticks = [-0.0075, -0.005, -0.0025, 0, 0.0025].map(tickLabel);
		expect(new Set(ticks).size).toBe(ticks.length);
		expect(ticks.slice(0, 3).every((t) => t.startsWith('−'))).toBe(true);
	});
});
