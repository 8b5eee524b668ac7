/**
 * @file What a training run keeps: checkpoints by step (checkpoint.ts) and history (ART's
 * history.jsonl), on disk in Node or in IndexedDB. A checkpoint is saved atomically with its
 * step's history line: after a crash the run has its earlier checkpoints, no half-written
 * one, and every checkpoint's line. One writer per run (else RunLockedError).
 */
export interface RunStore {
	/** Steps with a checkpoint, ascending. */
	listCheckpoints(): Promise<number[]>;
	/**
	 * Saves a step's checkpoint and, when given, the step's history line, committed together
	 * (both or neither survive a crash).
	 */
	saveCheckpoint(
		step: number,
		files: ReadonlyMap<string, Uint8Array>,
		historyEntry?: Record<string, unknown>
	): Promise<void>;
	/**
	 * The files of a step's checkpoint, checked against the sha256 seal they were saved with
	 * (checkpoint-seal.ts); throws CheckpointCorruptError naming the file when one differs, or
	 * when there is no checkpoint of the step.
	 */
	loadCheckpoint(step: number): Promise<Map<string, Uint8Array>>;
	deleteCheckpoint(step: number): Promise<void>;
	/**
	 * Takes a corrupt checkpoint out of the run's list (kept aside where the store can, else
	 * deleted); returns where it went, in words.
	 */
	setAsideCheckpoint(step: number): Promise<string>;
	appendHistory(entry: Record<string, unknown>): Promise<void>;
	readHistory(): Promise<Record<string, unknown>[]>;
	/** Replaces the whole history with `entries`, atomically (a repair). */
	rewriteHistory(entries: readonly Record<string, unknown>[]): Promise<void>;
	/** Says what was found and repaired (the CLI's stderr, the console). */
	warn(message: string): void;
	/** The run's summary record (run.json on disk); undefined for a run that has none yet. */
	readMeta(): Promise<RunMeta | undefined>;
	/** Replaces the summary record atomically. */
	writeMeta(meta: RunMeta): Promise<void>;
	/** Gives up the writer's lock (when it holds one); the run's owner calls it once, last. */
	close?(): void | Promise<void>;
}

/**
 * What a listing of saved runs shows without opening them: what the run was made from
 * (the base model, the warm start, the recipe that drives it) and where it stands.
 */
export interface RunMeta {
	name: string;
	project: string;
	baseModel: string;
	/** The warm-start adapter's location and mode, when the run has one. */
	warmStart?: { adapter: string; mode: string };
	/** The configuration that drives the run (a src/lib/run recipe), stored as given. */
	recipe?: unknown;
	/** The model's step and the last step's mean train reward (null before the first). */
	step: number;
	lastReward: number | null;
	/** ISO times. */
	created: string;
	updated: string;
}

/** A run's folder as `cli train --out` keeps it (node/run-store.ts) and a run's zip holds it
 * (run-archive.ts): the summary, the history, and a folder of checkpoints by step. */
export const META_FILE = 'run.json';
export const HISTORY_FILE = 'history.jsonl';
export const CHECKPOINTS_DIR = 'checkpoints';

/** ART's folder name of a step's checkpoint: 4 digits, zero-padded. */
export function checkpointName(step: number): string {
	return String(step).padStart(4, '0');
}
