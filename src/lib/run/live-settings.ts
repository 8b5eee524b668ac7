/**
 * @file The settings a run takes between two steps while paused (learning rate, KL weight,
 * temperature): their ranges, the check a change passes, the values a resumed run's history
 * recorded, and the learning rate's warm-up share (which the history records beside train/lr).
 */
import { RunError } from './errors';
import type { GrpoPhaseConfig } from './recipe';

/** The settings a run takes between two steps while it is paused (run-loop.ts RunOptions.live). */
export type LiveSettings = Partial<
	Pick<GrpoPhaseConfig, 'learningRate' | 'klBeta' | 'temperature'>
>;

/**
 * The range of each live setting, and the words that say it: one definition for the run
 * (checkLiveSettings), a resumed run's recorded values and the page's share links.
 */
export const LIVE_RANGES: Record<keyof LiveSettings, { ok: (x: number) => boolean; want: string }> =
	{
		learningRate: { ok: (x) => x > 0 && x <= 1, want: 'a number above 0 and at most 1' },
		klBeta: { ok: (x) => x >= 0 && x <= 10, want: 'a number from 0 to 10' },
		temperature: { ok: (x) => x > 0 && x <= 4, want: 'a number above 0 and at most 4' }
	};

const inRange = (field: keyof LiveSettings, x: unknown): x is number =>
	typeof x === 'number' && Number.isFinite(x) && LIVE_RANGES[field].ok(x);

/** The history field of a step that trained while the rate warmed up: its warmupFactor
 * (train/lr is the rate it trained at, this share of the rate set). */
export const LR_WARMUP = 'train/lr_warmup';

/**
 * The live settings a run's last trained step recorded (train/lr, train/kl_beta,
 * train/temperature; absent in steps made before they were recorded): what a Resume goes on
 * with when they were changed while paused. Values out of range are left out.
 */
export function recordedSettings(history: readonly Record<string, unknown>[]): LiveSettings {
	const last = history.findLast((h) => typeof h['train/kl_beta'] === 'number');
	if (!last) return {};
	const out: LiveSettings = {};
	const keys = [
		['learningRate', 'train/lr'],
		['klBeta', 'train/kl_beta'],
		['temperature', 'train/temperature']
	] as const;
	for (const [field, key] of keys) {
		let value = last[key];
		// a step that warmed up trained at a share of the rate set: the rate set is what goes on
		const share = last[LR_WARMUP];
		if (field === 'learningRate' && typeof value === 'number' && typeof share === 'number')
			value = share > 0 && share <= 1 ? value / share : NaN;
		if (inRange(field, value)) out[field] = value; // a damaged value: the recipe's stays
	}
	return out;
}

/** Throws RunError('invalid-recipe') naming the first live setting out of range. */
export function checkLiveSettings(s: LiveSettings): LiveSettings {
	for (const field of Object.keys(LIVE_RANGES) as (keyof LiveSettings)[]) {
		const x = s[field];
		if (x !== undefined && !inRange(field, x))
			throw new RunError(
				'invalid-recipe',
				`${field} must be ${LIVE_RANGES[field].want}, not ${JSON.stringify(x)}.`
			);
	}
	return s;
}

/** The share of `learningRate` GRPO step `grpoStep` (0-based) trains at: below 1 while
 * it warms up (GrpoPhaseConfig.warmupSteps), then 1. */
export function warmupFactor(g: Pick<GrpoPhaseConfig, 'warmupSteps'>, grpoStep: number): number {
	const w = g.warmupSteps ?? 0;
	return w > 0 ? Math.min(1, (grpoStep + 1) / w) : 1;
}
