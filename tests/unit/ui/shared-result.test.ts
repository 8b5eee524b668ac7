/**
 * A shared run's curve: written into a link and read back exactly (thinned to 40 points, the
 * last kept), refused by name when malformed, made from a run's history, and compared as a run.
 */
import { describe, expect, it } from 'vitest';
import { overlayColumns } from '../../../src/lib/ui/compare-runs';
import { presetSettings, readShareQuery, shareQuery } from '../../../src/lib/ui/share-link';
import {
	curveHistory,
	historyResult,
	MAX_CURVE_POINTS,
	readCurve,
	thinCurve,
	writeCurve,
	type ResultPoint
} from '../../../src/lib/ui/shared-result';

const line = (step: number, metrics: Record<string, number>) => ({
	step,
	recorded_at: '2026-12-06T00:00:00.000Z',
	...metrics
});

describe('a shared curve', () => {
	it('rides in the link with the result and reads back exactly, rewards to 4 decimals', () => {
		const s = { ...presetSettings('letters'), steps: 12, seed: 5 };
		const curve: ResultPoint[] = [
			{ step: 0, reward: null, evaluation: 0.05 },
			{ step: 1, reward: 0.123456, evaluation: null },
			{ step: 5, reward: 0.3, evaluation: 0.45 },
			{ step: 12, reward: -0.25, evaluation: 0.6 }
		];
		const query = shareQuery(s, '/', { step: 12, reward: -0.25, evaluation: 0.6, curve });
		expect(new URLSearchParams(query).get('curve')).toBe(
			'0::0.05,1:0.1235,5:0.3:0.45,12:-0.25:0.6'
		);
		const read = readShareQuery(query);
		expect(read.ignored).toEqual([]);
		expect(read.result?.curve).toEqual([
			curve[0],
			{ step: 1, reward: 0.1235, evaluation: null },
			curve[2],
			curve[3]
		]);
	});

	it('a long history is thinned to 40 evenly spaced points, the first and the last kept', () => {
		const points = Array.from({ length: 301 }, (_, step) => ({
			step,
			reward: step / 400,
			evaluation: null
		}));
		const thin = thinCurve(points);
		expect(thin).toHaveLength(MAX_CURVE_POINTS);
		expect(thin[0].step).toBe(0);
		expect(thin.at(-1)!.step).toBe(300);
		expect(thin.every((p, i) => i === 0 || p.step > thin[i - 1].step)).toBe(true);
		expect(readCurve(writeCurve(points))).toEqual(thin);
	});

	it('malformed curves are named and dropped; the result stays', () => {
		const bad = [
			'',
			'1',
			'1:',
			'1::',
			'x:0.5',
			'2:0.5,1:0.5',
			'1:0.5,1:0.6',
			'1:0.5:0.5:0.5',
			'1:1e9',
			'1:0.5;2:0.6'
		];
		for (const text of bad) {
			const r = readShareQuery(`v=1&result=3:0.5&curve=${encodeURIComponent(text)}`);
			expect(r.result, text).toEqual({ step: 3, reward: 0.5 });
			expect(r.ignored, text).toHaveLength(1);
			expect(r.ignored[0], text).toMatch(/^curve ".*" is not up to 40 points STEP:REWARD/);
		}
		const tooMany = Array.from({ length: 41 }, (_, i) => `${i}:0.5`).join(',');
		expect(readShareQuery(`v=1&result=3:0.5&curve=${tooMany}`).result?.curve).toBeUndefined();
		// a curve without a result is not shown
		const alone = readShareQuery('v=1&curve=1:0.5');
		expect(alone.result).toBeUndefined();
		expect(alone.ignored).toEqual(['curve comes with a result; this link has none.']);
	});

	it("from a run's history: every step with a reward or an evaluation, a step logged twice merged", () => {
		const history = [
			line(0, { 'val/reward': 0.1 }),
			line(1, { 'train/reward': 0.2 }),
			line(2, { 'train/reward': 0.3 }),
			line(2, { 'val/reward': 0.4, 'train/loss': 0.01 }),
			line(3, { 'train/loss': 0.02 })
		];
		expect(historyResult(history)).toEqual({
			step: 2,
			reward: 0.3,
			evaluation: 0.4,
			curve: [
				{ step: 0, reward: null, evaluation: 0.1 },
				{ step: 1, reward: 0.2, evaluation: null },
				{ step: 2, reward: 0.3, evaluation: 0.4 }
			]
		});
		// nothing trained yet: no result
		expect(historyResult([line(0, { 'val/reward': 0.1 })])).toBeUndefined();
	});

	it('compared as a run: its curve overlaid by step with a saved one', () => {
		const curve: ResultPoint[] = [
			{ step: 0, reward: null, evaluation: 0.1 },
			{ step: 2, reward: 0.5, evaluation: null }
		];
		const shared = { name: 'shared link', recipe: null, history: curveHistory(curve) };
		const saved = { name: 'mine', recipe: null, history: [line(1, { 'train/reward': 0.2 })] };
		expect(overlayColumns([saved, shared], 'train/reward')).toEqual([
			[1, 2],
			[0.2, null],
			[null, 0.5]
		]);
	});
});
