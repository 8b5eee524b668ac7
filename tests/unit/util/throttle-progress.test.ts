/**
 * Load progress thinned for messages (util/throttle-progress.ts): each phase's first and last
 * report always go out, the ones between at most every PROGRESS_INTERVAL_MS.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
	PROGRESS_INTERVAL_MS,
	throttledProgress,
	type LoadProgress
} from '../../../src/lib/util/throttle-progress';

afterEach(() => vi.useRealTimers());

describe('throttledProgress', () => {
	it("sends each phase's first and last report, and one per interval between", () => {
		vi.useFakeTimers();
		const sent: LoadProgress[] = [];
		const report = throttledProgress((p) => sent.push(p));
		for (let i = 0; i <= 1000; i++) {
			report({ phase: 'download', file: 'model.safetensors', loaded: i, total: 1000 });
			vi.advanceTimersByTime(1); // 1000 chunks over one second
		}
		for (let i = 0; i <= 10; i++) report({ phase: 'upload', loaded: i, total: 10 });
		const downloads = sent.filter((p) => p.phase === 'download');
		expect(downloads[0].loaded).toBe(0);
		expect(downloads.at(-1)!.loaded).toBe(1000);
		expect(downloads.length).toBeLessThanOrEqual(1000 / PROGRESS_INTERVAL_MS + 2);
		expect(downloads.length).toBeGreaterThanOrEqual(1000 / PROGRESS_INTERVAL_MS);
		// the upload's first report goes out at once (a new phase), and its last
		expect(sent.filter((p) => p.phase === 'upload').map((p) => p.loaded)).toEqual([0, 10]);
	});

	it('a listener that throws does not stop the load', () => {
		const report = throttledProgress(() => {
			throw new Error('the page is gone');
		});
		expect(() => report({ phase: 'upload', loaded: 1, total: 1 })).not.toThrow();
	});
});
