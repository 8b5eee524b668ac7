/**
 * @file Which checkpoints to delete, as ART's `delete_checkpoints(best_checkpoint_metric)`
 * decides: keep the latest step and the step whose history has the best value of the metric
 * (higher is better; ART's default metric is 'val/reward'), delete the rest. A step's value
 * is the last one logged at that step; steps never scored under the metric cannot be best.
 * With no scored step, only the latest is kept.
 */
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
