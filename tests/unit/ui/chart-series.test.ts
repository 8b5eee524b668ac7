/**
 * The charts' data (src/lib/ui/chart-series.ts) from a hand-written history: an evaluation at
 * step 0, two GRPO steps (the second logged twice: a retried round, then the trained one),
 * an evaluation beside step 2, and an SFT step. Each chart gets exactly the steps that have
 * its values, in step order, with null where a step lacks one series; rates and seconds are
 * computed by hand below.
 */
import { describe, expect, it } from 'vitest';
import type { HistoryEntry } from '../../../src/lib/agent/backend/types';
import { CHARTS, chartData } from '../../../src/lib/ui/chart-series';

const at = '2026-12-04T00:00:00Z';
const history: HistoryEntry[] = [
	{ step: 2, recorded_at: at, 'train/reward': 0.1, 'train/reward_std_dev': 0.9 }, // retried
	{ step: 0, recorded_at: at, 'val/reward': 0.25 },
	{
		step: 1,
		recorded_at: at,
		'train/reward': 0.5,
		'train/reward_std_dev': 0.2,
		'train/loss': -0.01,
		'train/kl': 0,
		'train/grad_norm': 0.3,
		'train/completion_tokens': 4,
		'train/trajectories': 32,
		'train/rollout_ms': 2000,
		'train/tokens': 1000,
		'train/forward_backward_ms': 500,
		'train/optimizer_ms': 10,
		'train/reference_ms': 100,
		'train/checkpoint_ms': 50
	},
	{
		step: 2,
		recorded_at: at,
		'train/reward': 0.75,
		'train/reward_std_dev': 0.25,
		'train/loss': -0.02,
		'train/kl': 0.05,
		'train/grad_norm': Number.NaN // not plotted: a gap
	},
	{ step: 2, recorded_at: at, 'val/reward': 0.5, 'val/illegal': 0 },
	{ step: 3, recorded_at: at, 'sft/loss': 1.5, 'sft/tokens': 300, 'sft/forward_backward_ms': 1500 }
];

describe('chart data', () => {
	const data = chartData(history);

	it('reward: the mean, the band mean ± sd, and the evaluations, by step', () => {
		// step 2's retried line is overwritten by the trained one (later lines win)
		expect(data.reward).toEqual([
			[0, 1, 2],
			[null, 0.5, 0.75],
			[null, 0.3, 0.5],
			[null, 0.7, 1],
			[0.25, null, 0.5]
		]);
	});

	it('loss, KL and gradient norm take only the steps that have them', () => {
		expect(data.loss).toEqual([
			[1, 2, 3],
			[-0.01, -0.02, null],
			[null, null, 1.5]
		]);
		expect(data.kl).toEqual([
			[1, 2],
			[0, 0.05]
		]);
		expect(data.grad).toEqual([[1], [0.3]]);
	});

	it('tokens per second and seconds per phase', () => {
		// rollouts: 4 tokens x 32 games / 2 s; update: 1000 / 0.5 s; SFT: 300 / 1.5 s
		expect(data.speed).toEqual([
			[1, 3],
			[64, null],
			[2000, 200]
		]);
		expect(data.time).toEqual([
			[1, 3],
			[2, null],
			[0.1, null],
			[0.5, 1.5],
			[0.01, null],
			[0.05, null]
		]);
	});

	it('every chart has one column per series plus the steps; an empty history has none', () => {
		for (const spec of CHARTS) expect(data[spec.key]).toHaveLength(spec.series.length + 1);
		const empty = chartData([]);
		for (const spec of CHARTS) expect(empty[spec.key][0]).toEqual([]);
	});
});
