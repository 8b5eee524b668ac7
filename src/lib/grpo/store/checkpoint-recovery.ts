/**
 * @file Where a run continues: its newest checkpoint that is intact (its seal matches and it
 * decodes). Newer ones that are corrupt are set aside (out of the list, so pruning and the
 * next resume never see them) and the history lines of their steps dropped, each said through
 * the store's warn(); with none intact, the newest one's error is thrown and nothing changes.
 */
import { CheckpointCorruptError } from '../errors';
import { checkpointName, type RunStore } from './run-store';

export async function newestIntactCheckpoint<T>(
	store: RunStore,
	decode: (files: Map<string, Uint8Array>, step: number) => Promise<T> | T
): Promise<{ step: number; checkpoint: T } | undefined> {
	const steps = await store.listCheckpoints();
	const corrupt: { step: number; error: CheckpointCorruptError }[] = [];
	for (const step of [...steps].reverse()) {
		let checkpoint: T;
		try {
			checkpoint = await decode(await store.loadCheckpoint(step), step);
		} catch (error) {
			if (!(error instanceof CheckpointCorruptError)) throw error;
			corrupt.push({ step, error });
			continue;
		}
		for (const c of corrupt) {
			const where = await store.setAsideCheckpoint(c.step);
			store.warn(
				`skipped the checkpoint of step ${c.step} (${c.error.problem}): ` +
					`set aside (${where}); the run continues from step ${step}`
			);
		}
		if (corrupt.length) {
			const history = await store.readHistory();
			const kept = history.filter((h) => !(typeof h.step === 'number' && h.step > step));
			if (kept.length < history.length) {
				await store.rewriteHistory(kept);
				store.warn(
					`dropped ${history.length - kept.length} history line(s) of the steps after ` +
						`${checkpointName(step)}: they are trained again from there`
				);
			}
		}
		return { step, checkpoint };
	}
	if (corrupt.length) throw corrupt[0].error;
	return undefined;
}
