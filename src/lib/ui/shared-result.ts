/**
 * @file A run's result as a share link carries it, to show (and compare with) whoever opens
 * the link, never to train on: `result=STEP:REWARD[:EVAL]` (the last trained step) and
 * `curve=S:R[:E],S:R[:E],...` (up to MAX_CURVE_POINTS steps of its history, evenly thinned,
 * the last kept; R empty at a step with only an evaluation). Readers return null on
 * anything else, so a bad link is named, not trusted. The shared run is compared with saved
 * ones as history lines (curveHistory).
 */
import type { HistoryEntry } from '../agent/backend/types';
import { byStep, num } from './chart-series';

/** One step of a shared curve: its mean training reward and its evaluation, where it had them. */
export interface ResultPoint {
	step: number;
	reward: number | null;
	evaluation: number | null;
}

export interface SharedResult {
	/** The last trained step. */
	step: number;
	/** Its mean training reward. */
	reward: number;
	/** The last evaluation's score (greedy), when the run had one. */
	evaluation?: number;
	/** The run's curve (steps ascending), when the link carries one. */
	curve?: ResultPoint[];
}

export const RESULT_PARAM = 'result';
export const RESULT_WANT = 'STEP:REWARD or STEP:REWARD:EVALUATION (e.g. 100:0.74:0.81)';
export const CURVE_PARAM = 'curve';
export const CURVE_WANT =
	'up to 40 points STEP:REWARD[:EVALUATION], steps ascending, comma-separated (e.g. 0::0.5,5:0.6:0.7)';
/** Points a link's curve holds at most (a longer history is thinned to this many). */
export const MAX_CURVE_POINTS = 40;

const NUMBER = /^-?\d{1,7}(\.\d{1,6})?$/;
const STEP = /^\d{1,7}$/;
const written = (x: number) => String(Number(x.toFixed(4)));

/** A result as its parameter writes it (rewards to 4 decimals). */
export function writeResult(r: SharedResult): string {
	return [
		String(r.step),
		written(r.reward),
		...(r.evaluation === undefined ? [] : [written(r.evaluation)])
	].join(':');
}

export function readResult(text: string): SharedResult | null {
	const parts = text.split(':');
	if (parts.length < 2 || parts.length > 3 || !STEP.test(parts[0])) return null;
	if (!parts.slice(1).every((p) => NUMBER.test(p))) return null;
	const [step, reward, evaluation] = parts.map(Number);
	return { step, reward, ...(parts.length === 3 ? { evaluation } : {}) };
}

/** At most `max` of the points, evenly spaced, the first and the last kept. */
export function thinCurve(points: readonly ResultPoint[], max = MAX_CURVE_POINTS): ResultPoint[] {
	if (points.length <= max) return [...points];
	return Array.from(
		{ length: max },
		(_, i) => points[Math.round((i * (points.length - 1)) / (max - 1))]
	);
}

export function writeCurve(points: readonly ResultPoint[]): string {
	return thinCurve(points)
		.map((p) => {
			const reward = p.reward === null ? '' : written(p.reward);
			return p.evaluation === null
				? `${p.step}:${reward}`
				: `${p.step}:${reward}:${written(p.evaluation)}`;
		})
		.join(',');
}

export function readCurve(text: string): ResultPoint[] | null {
	const items = text.split(',');
	if (items.length > MAX_CURVE_POINTS) return null;
	const points: ResultPoint[] = [];
	for (const item of items) {
		const parts = item.split(':');
		if (parts.length < 2 || parts.length > 3 || !STEP.test(parts[0])) return null;
		const [reward, evaluation = ''] = parts.slice(1);
		if ((reward !== '' && !NUMBER.test(reward)) || (evaluation !== '' && !NUMBER.test(evaluation)))
			return null;
		if (reward === '' && evaluation === '') return null;
		const step = Number(parts[0]);
		if (points.length && step <= points[points.length - 1].step) return null;
		points.push({
			step,
			reward: reward === '' ? null : Number(reward),
			evaluation: evaluation === '' ? null : Number(evaluation)
		});
	}
	return points;
}

/**
 * A run's result from its history: the last trained step's reward, the last evaluation and
 * the curve of every step with either; undefined before a step is trained.
 */
export function historyResult(history: readonly HistoryEntry[]): SharedResult | undefined {
	const curve: ResultPoint[] = [];
	for (const [step, h] of [...byStep(history)].sort(([a], [b]) => a - b)) {
		const reward = num(h, 'train/reward');
		const evaluation = num(h, 'val/reward');
		if (reward !== null || evaluation !== null) curve.push({ step, reward, evaluation });
	}
	const trained = curve.findLast((p) => p.reward !== null && p.step >= 1);
	if (!trained) return undefined;
	const evaluation = curve.findLast((p) => p.evaluation !== null)?.evaluation ?? undefined;
	return {
		step: trained.step,
		reward: trained.reward!,
		...(evaluation === undefined ? {} : { evaluation }),
		curve
	};
}

/** A shared curve as history lines (the form a saved run's history has, to compare them). */
export function curveHistory(curve: readonly ResultPoint[]): HistoryEntry[] {
	return curve.map((p) => ({
		step: p.step,
		recorded_at: '', // the sharer's times are not in the link
		...(p.reward === null ? {} : { 'train/reward': p.reward }),
		...(p.evaluation === null ? {} : { 'val/reward': p.evaluation })
	}));
}
