/**
 * @file Games per step sized to the device ("auto"): a run whose recipe has `grpo.autoSize`
 * times each GRPO step (rollouts + update + checkpoint, as the visitor waits for it) and sets
 * the next step's groups so a step takes STEP_SECONDS on this device, within the recipe's
 * [minGroups, maxGroups]. The group size stays: GRPO compares games within a group.
 *
 * Why steps and not a separate calibration: a step's time is not proportional to its games
 * (a GPU's step is dispatch-bound: 64 tic-tac-toe games take ~0.9 s on an H100, 512 ~2.7 s;
 * BENCHMARKS.md "Time to learn"), and the update's share differs by device, so only a real
 * step measures it; the first steps train as any other, at the sizes they were played.
 */

import type { GrpoPhaseConfig } from './recipe';

/** The time a step should take, in seconds: long enough to fill a GPU, short enough to watch. */
export const STEP_SECONDS: StepSeconds = { low: 2, high: 4 };

/** A step's time in seconds that auto sizing keeps to: grown under `low`, shrunk over `high`. */
export interface StepSeconds {
	low: number;
	high: number;
}

/** The bounds of `grpo.autoSize`. */
export interface AutoSize {
	minGroups: number;
	maxGroups: number;
	/**
	 * The step time to keep to, where the preset's shortest useful step is longer than
	 * STEP_SECONDS (absent: STEP_SECONDS): a 2048 game is ~85 sequential replies, so a step
	 * lasts seconds at any size and more groups cost little more time.
	 */
	stepSeconds?: StepSeconds;
}

/** The step time `bounds` keeps to, and the middle it aims at when it resizes. */
export function stepTarget(bounds: AutoSize): StepSeconds & { target: number } {
	const { low, high } = bounds.stepSeconds ?? STEP_SECONDS;
	return { low, high, target: (low + high) / 2 };
}

/** The bounds given to a recipe that asks for auto without its own (a form's, a flag's). */
export const DEFAULT_AUTO_SIZE: AutoSize = { minGroups: 1, maxGroups: 64 };

/**
 * `grpo` with its games per step fixed at `groups`, or auto (its own bounds, else the default
 * ones; `groups` then the size it starts at): how a form's or a flag's choice enters a recipe.
 */
export function sizedGrpo(grpo: GrpoPhaseConfig, groups: number | 'auto'): GrpoPhaseConfig {
	if (groups === 'auto') return { ...grpo, autoSize: grpo.autoSize ?? DEFAULT_AUTO_SIZE };
	const fixed = { ...grpo, groups };
	delete fixed.autoSize;
	return fixed;
}

/**
 * The groups of the next step, given that a step of `groups` took `seconds`: doubled at most
 * while under the bounds' low step time (the step time grows slower than its games), scaled
 * down by the overshoot when over the high one, else kept; always within the bounds.
 */
export function nextGroups(groups: number, seconds: number, bounds: AutoSize): number {
	const clamp = (g: number) => Math.min(bounds.maxGroups, Math.max(bounds.minGroups, g));
	const { low, high, target } = stepTarget(bounds);
	if (!(seconds > 0)) return clamp(groups);
	if (seconds < low)
		return clamp(Math.max(groups + 1, Math.round(groups * Math.min(2, target / seconds))));
	if (seconds > high) return clamp(Math.min(groups - 1, Math.floor((groups * target) / seconds)));
	return clamp(groups);
}

/**
 * A GRPO step's seconds from its history line: rollouts, update and checkpoint (what the
 * visitor waits for; step-through pauses excluded). NaN when the line has no update.
 */
export function stepSeconds(metrics: Record<string, unknown>): number {
	const ms = (key: string) => (typeof metrics[key] === 'number' ? (metrics[key] as number) : NaN);
	return (ms('train/rollout_ms') + ms('train/step_ms') + (ms('train/checkpoint_ms') || 0)) / 1000;
}

/** The history key of the groups a step played (auto sizing reads it back on resume). */
export const GROUPS_PLAYED = 'train/groups_played';

/** The history key of an auto-sized run's evaluation games (its first evaluation's count). */
export const EVAL_GAMES = 'val/games';

/** Why a step has the groups it has, in a sentence the page and the CLI show. */
export function sizingReason(
	before: { groups: number; seconds: number } | null,
	groups: number,
	groupSize: number,
	bounds: AutoSize
): string {
	const games = (g: number) => `${g} × ${groupSize} games`;
	const { low, high } = stepTarget(bounds);
	const aim = `aiming at ${low}–${high} s a step on this device`;
	if (!before) return `Games per step: auto, starting at ${games(groups)} (${aim}).`;
	const took = `a step of ${games(before.groups)} took ${before.seconds.toFixed(1)} s`;
	if (groups === before.groups) {
		const limit =
			groups === bounds.maxGroups && before.seconds < low
				? `, the most this preset plays`
				: groups === bounds.minGroups && before.seconds > high
					? `, the fewest this preset plays`
					: '';
		return `Games per step: auto, ${games(groups)}${limit} (${took}; ${aim}).`;
	}
	return `Games per step: auto, now ${games(groups)} (${took}; ${aim}).`;
}

/**
 * The time the first evaluation of an auto-sized run may take, in seconds (then its size
 * stays): two of its longest steps.
 */
export const evalSeconds = (bounds: AutoSize | undefined): number =>
	2 * stepTarget(bounds ?? DEFAULT_AUTO_SIZE).high;

/** The games of an evaluation's first batch, when its size is being found. */
export const FIRST_EVAL_BATCH = 16;

/**
 * The first evaluation of an auto-sized run, sized to the device: games [0, n) of the series
 * in batches that double (16, 16, 32, 64, ...; a model's requests batch within one) until
 * `seconds` have passed (evalSeconds) or `max` games are played. The clock starts after the
 * first batch: it carries the device's first compile of the decode pipelines (8 s of an
 * H100's first 128 games), not what a game costs. Later evaluations play as many (the
 * history's `val/games`), so every evaluation of a run scores the same games.
 */
export async function sizedEvaluation<T>(
	play: (from: number, games: number) => Promise<T[]>,
	max: number,
	seconds: number,
	now: () => number = () => performance.now()
): Promise<T[]> {
	const out: T[] = [];
	let t0 = 0;
	while (out.length < max) {
		const batch = Math.min(max - out.length, Math.max(FIRST_EVAL_BATCH, out.length));
		out.push(...(await play(out.length, batch)));
		if (out.length === batch) t0 = now();
		else if ((now() - t0) / 1000 > seconds) break;
	}
	return out;
}
