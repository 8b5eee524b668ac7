/**
 * @file Which checkpoints to delete, as ART's `delete_checkpoints(best_checkpoint_metric)`:
 * keep the latest step and the step with the best (highest) last-logged value of the metric
 * (default 'val/reward'), delete the rest. `pruneCheckpoints` reads the kept ones back
 * first, so a run is never left without an intact checkpoint.
 */
import { CheckpointCorruptError } from '../errors';
import type { RunStore } from './run-store';

export interface RetentionOptions {
	/** Default 'val/reward'. */
	bestBy?: string;
}

export function checkpointsToDelete(
	steps: readonly number[],
	history: readonly Record<string, unknown>[],
	{ bestBy = 'val/reward' }: RetentionOptions = {}
): number[] {
	if (steps.length === 0) return [];
	const latest = Math.max(...steps);
	const byStep = new Map<number, number>();
	for (const entry of history) {
		const value = entry[bestBy];
		if (typeof entry.step === 'number' && typeof value === 'number' && Number.isFinite(value))
			byStep.set(entry.step, value);
	}
	let best: number | undefined;
	for (const step of steps) {
		const value = byStep.get(step);
		if (value === undefined) continue;
		if (best === undefined || value > byStep.get(best)!) best = step;
	}
	return steps.filter((s) => s !== latest && s !== best).sort((a, b) => a - b);
}

/**
 * Deletes the checkpoints `checkpointsToDelete` names, once every one it keeps loads intact;
 * a kept one that is corrupt is set aside (said through warn()) and nothing is deleted, so an
 * older intact checkpoint stays. Returns the steps deleted.
 */
export async function pruneCheckpoints(
	store: RunStore,
	options: RetentionOptions & {
		/**
		 * Steps known intact (written or read back by this process): not read again, so a
		 * step's pruning costs no reading of large checkpoints; those read here are added.
		 */
		verified?: Set<number>;
	} = {}
): Promise<number[]> {
	const steps = await store.listCheckpoints();
	const doomed = checkpointsToDelete(steps, await store.readHistory(), options);
	if (!doomed.length) return doomed;
	for (const step of steps.filter((s) => !doomed.includes(s) && !options.verified?.has(s)))
		try {
			await store.loadCheckpoint(step);
			options.verified?.add(step);
		} catch (error) {
			if (!(error instanceof CheckpointCorruptError)) throw error;
			const where = await store.setAsideCheckpoint(step);
			store.warn(
				`the checkpoint of step ${step} is corrupt (${error.problem}): ` +
					`set aside (${where}); the older checkpoints are kept`
			);
			return [];
		}
	for (const step of doomed) await store.deleteCheckpoint(step);
	return doomed;
}
