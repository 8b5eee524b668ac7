/**
 * The Train panel's step rows (ui/run-rows.ts): a step read back from the stored history and
 * the same step as its live event make the same row (one function builds both); SFT rows
 * carry their loss and no reward; RULER's metrics give the judge's columns; a history's
 * judge totals add up.
 */
import { describe, expect, it } from 'vitest';
import type { HistoryEntry } from '../../../src/lib/agent/backend/types';
import { addJudge, NO_JUDGE, rowsOf, stepRow } from '../../../src/lib/ui/run-rows';

const judged = {
	'train/ruler_score': 0.6,
	'train/independent_reward': 0.4,
	'train/ruler_dropped_groups': 1,
	'train/ruler_judge_prompt_tokens': 100,
	'train/ruler_judge_completion_tokens': 20,
	'train/ruler_judge_cost': 0.001,
	'train/ruler_judge_latency_ms': 250
};
const history: HistoryEntry[] = [
	{ step: 1, recorded_at: '', 'sft/loss': 1.5 },
	{ step: 2, recorded_at: '', 'train/reward': 0.5, 'train/loss': 0.25 },
	{ step: 2, recorded_at: '', 'train/reward': 0.5, 'train/skipped': 1 },
	{ step: 3, recorded_at: '', 'train/reward': 0.7, 'train/loss': 0.1, ...judged },
	{ step: 3, recorded_at: '', 'val/reward': 0.8 }
];

describe('step rows', () => {
	it('a stored history gives one row per train or SFT step, keyed by position', () => {
		const rows = rowsOf(history);
		expect(rows.map((r) => [r.key, r.step, r.split, r.reward, r.loss, r.skipped])).toEqual([
			[0, 1, 'sft', null, 1.5, null],
			[1, 2, 'train', 0.5, 0.25, null],
			[2, 2, 'train', 0.5, null, 'no-signal'],
			[3, 3, 'train', 0.7, 0.1, null]
		]);
		expect(rows[3]).toMatchObject({ judge: 0.6, game: 0.4, dropped: 1, judgeFailure: null });
		expect(rows[1]).toMatchObject({ judge: null, game: null, dropped: null });
	});

	it("a live step event makes the row its stored line makes (plus the judge's failure)", () => {
		const metrics = { 'train/reward': 0.7, 'train/loss': 0.1, ...judged };
		const live = stepRow(3, { step: 3, split: 'train', metrics, judgeFailure: 'timeout' });
		expect(live).toEqual({ ...rowsOf(history)[3], judgeFailure: 'timeout' });
		const sft = stepRow(0, { step: 1, split: 'sft', metrics: { 'sft/loss': 1.5 } });
		expect(sft).toEqual(rowsOf(history)[0]);
	});

	it("the judge's totals add up over the steps it judged", () => {
		const t = history.reduce(addJudge, { ...NO_JUDGE });
		expect(t).toEqual({ steps: 1, dropped: 1, tokens: 120, cost: 0.001, latencyMs: 250 });
		expect(addJudge(t, { 'train/reward': 1 })).toBe(t);
	});
});
