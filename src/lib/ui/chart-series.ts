/**
 * @file What the run's charts plot, from the run's history (HistoryEntry), so a live run and
 * a reloaded one chart alike: per chart an x axis (step) and series in uPlot's columns, null
 * where a step has no value: reward (mean ± std, evaluation), loss, kl, grad, speed
 * (rollout and update tokens/s), time (seconds per phase). A metric logged twice at a step
 * keeps its last value.
 */
import type { HistoryEntry } from '../agent/backend/types';

export type Column = (number | null)[];

export interface ChartSpec {
	key: 'reward' | 'loss' | 'kl' | 'grad' | 'speed' | 'time';
	title: string;
	/** What the chart says, for a screen reader (and the figure's caption). */
	about: string;
	series: { label: string; unit?: string }[];
}

export const CHARTS: readonly ChartSpec[] = [
	{
		key: 'reward',
		title: 'Reward',
		about:
			"Mean reward of each step's games, the band one standard deviation around it, and the evaluation score on fixed games.",
		series: [{ label: 'mean reward' }, { label: '− 1 sd' }, { label: '+ 1 sd' }, { label: 'eval' }]
	},
	{
		key: 'loss',
		title: 'Loss',
		about: "The training loss of each step (GRPO's, or SFT's in a warm start).",
		series: [{ label: 'GRPO loss' }, { label: 'SFT loss' }]
	},
	{
		key: 'kl',
		title: 'KL to the reference',
		about: 'How far the policy has moved from its reference (KL divergence per token).',
		series: [{ label: 'KL' }]
	},
	{
		key: 'grad',
		title: 'Gradient norm',
		about: "The norm of each step's gradient before clipping.",
		series: [{ label: 'grad norm' }]
	},
	{
		key: 'speed',
		title: 'Tokens per second',
		about:
			'Sampled tokens per second during rollouts, trained tokens per second during the update.',
		series: [
			{ label: 'rollouts', unit: 'tok/s' },
			{ label: 'update', unit: 'tok/s' }
		]
	},
	{
		key: 'time',
		title: 'Seconds per phase',
		about:
			'Time each phase of a step took: rollouts, reference logprobs, forward and backward, optimizer, checkpoint.',
		series: [
			{ label: 'rollouts', unit: 's' },
			{ label: 'reference', unit: 's' },
			{ label: 'fwd+bwd', unit: 's' },
			{ label: 'optimizer', unit: 's' },
			{ label: 'checkpoint', unit: 's' }
		]
	}
];

export type ChartData = Record<ChartSpec['key'], Column[]>;

/** A finite number at `key`, else null. */
export const num = (h: Record<string, unknown> | undefined, key: string): number | null => {
	const v = h?.[key];
	return typeof v === 'number' && Number.isFinite(v) ? v : null;
};
const ratio = (a: number | null, b: number | null) => (a !== null && b ? a / b : null);
const seconds = (ms: number | null) => (ms === null ? null : ms / 1000);

/** One merged record per step of history lines (later lines win, metric by metric). */
export function byStep(history: readonly HistoryEntry[]): Map<number, Record<string, unknown>> {
	const bySteps = new Map<number, Record<string, unknown>>();
	for (const h of history) bySteps.set(h.step, { ...bySteps.get(h.step), ...h });
	return bySteps;
}

/** The charts' columns from history lines (any order; one x per step that has a value). */
export function chartData(history: readonly HistoryEntry[]): ChartData {
	const bySteps = byStep(history);
	const steps = [...bySteps.keys()].sort((a, b) => a - b);
	const at = (s: number) => bySteps.get(s);

	const columns = (values: ((h: Record<string, unknown> | undefined) => number | null)[]) => {
		const rows = steps.filter((s) => values.some((f) => f(at(s)) !== null));
		return [rows, ...values.map((f) => rows.map((s) => f(at(s))))];
	};
	const meanSd = (sign: number) => (h: Record<string, unknown> | undefined) => {
		const mean = num(h, 'train/reward');
		const sd = num(h, 'train/reward_std_dev');
		return mean === null || sd === null ? null : mean + sign * sd;
	};
	return {
		reward: columns([
			(h) => num(h, 'train/reward'),
			meanSd(-1),
			meanSd(1),
			(h) => num(h, 'val/reward')
		]),
		loss: columns([(h) => num(h, 'train/loss'), (h) => num(h, 'sft/loss')]),
		kl: columns([(h) => num(h, 'train/kl')]),
		grad: columns([(h) => num(h, 'train/grad_norm')]),
		speed: columns([
			(h) => {
				const sampled = num(h, 'train/completion_tokens');
				const games = num(h, 'train/trajectories');
				return ratio(
					sampled !== null && games !== null ? sampled * games : null,
					seconds(num(h, 'train/rollout_ms'))
				);
			},
			(h) =>
				ratio(
					num(h, 'train/tokens') ?? num(h, 'sft/tokens'),
					seconds(num(h, 'train/forward_backward_ms') ?? num(h, 'sft/forward_backward_ms'))
				)
		]),
		time: columns([
			(h) => seconds(num(h, 'train/rollout_ms')),
			(h) => seconds(num(h, 'train/reference_ms')),
			(h) => seconds(num(h, 'train/forward_backward_ms') ?? num(h, 'sft/forward_backward_ms')),
			(h) => seconds(num(h, 'train/optimizer_ms') ?? num(h, 'sft/optimizer_ms')),
			(h) => seconds(num(h, 'train/checkpoint_ms') ?? num(h, 'sft/checkpoint_ms'))
		])
	};
}
