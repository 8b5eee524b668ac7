/**
 * @file What a training run keeps: its checkpoints (each a set of named files,
 * checkpoint.ts) by step, and its history (one JSON object per line, ART's history.jsonl).
 * Two implementations: on disk in Node (node-run-store.ts) and in IndexedDB in the browser
 * (idb-run-store.ts). Both save a checkpoint atomically: after a crash mid-save the run has
 * its previous checkpoints and no half-written one.
 */
export interface RunStore {
	/** Steps with a checkpoint, ascending. */
	listCheckpoints(): Promise<number[]>;
	saveCheckpoint(step: number, files: ReadonlyMap<string, Uint8Array>): Promise<void>;
	/** The files of a step's checkpoint; throws CheckpointCorruptError when there is none. */
	loadCheckpoint(step: number): Promise<Map<string, Uint8Array>>;
	deleteCheckpoint(step: number): Promise<void>;
	appendHistory(entry: Record<string, unknown>): Promise<void>;
	readHistory(): Promise<Record<string, unknown>[]>;
}

/** ART's folder name of a step's checkpoint: 4 digits, zero-padded. */
export function checkpointName(step: number): string {
	return String(step).padStart(4, '0');
}
