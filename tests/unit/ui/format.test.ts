import { describe, expect, it } from 'vitest';
import { formatBytes, formatCount, formatErr, formatMs } from '../../../src/lib/ui/format';

describe('page number formatting', () => {
	it('formats byte sizes in binary units', () => {
		expect(formatBytes(0)).toBe('0 B');
		expect(formatBytes(16384)).toBe('16 KiB');
		expect(formatBytes(128 * 2 ** 20)).toBe('128 MiB');
		expect(formatBytes(1.5 * 2 ** 30)).toBe('1.5 GiB');
		expect(formatBytes(2 ** 40)).toBe('1 TiB');
		expect(formatBytes(4294967292)).toBe('4.0 GiB');
	});
	it('formats durations, errors and counts', () => {
		expect(formatMs(12.4)).toBe('12 ms');
		expect(formatMs(4567)).toBe('4.6 s');
		expect(formatMs(NaN)).toBe('—');
		expect(formatErr(0)).toBe('0');
		expect(formatErr(1.234e-7)).toBe('1.2e-7');
		expect(formatErr(NaN)).toBe('—');
		expect(formatErr(Infinity)).toBe('∞');
		expect(formatCount(65535)).toBe('65,535');
	});
});
