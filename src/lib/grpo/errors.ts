/**
 * @file Typed errors of the GRPO layer. Like gpu/errors.ts, each says what is wrong and
 * what to do, and carries a `kind` that survives structured cloning across the worker
 * boundary (class identity does not), so callers switch on it.
 */

export type GrpoErrorKind =
	| 'non-finite-reward'
	| 'missing-logprobs'
	| 'invalid-sequence'
	| 'invalid-batch'
	| 'grpo-config'
	| 'checkpoint-corrupt'
	| 'adapter-mismatch'
	| 'run-locked'
	| 'invalid-run-archive'
	| 'storage-full';

export class GrpoError extends Error {
	constructor(
		readonly kind: GrpoErrorKind,
		message: string
	) {
		super(message);
		this.name = 'GrpoError';
	}
}

/** A reward is NaN or infinite: the group's advantages would be NaN for every member. */
export class NonFiniteRewardError extends GrpoError {
	constructor(
		readonly index: number,
		readonly reward: number
	) {
		super(
			'non-finite-reward',
			`Reward ${reward} of trajectory ${index} in its group is not a finite number. ` +
				'Check the reward function: every trajectory needs a finite reward before training.'
		);
		this.name = 'NonFiniteRewardError';
	}
}

/** A trained token has no rollout logprob, so its importance ratio cannot be formed.
 * `sequence`: the input index (packing) or the batch row (loss); `position`: the token's
 * index in its sequence. */
export class MissingLogprobsError extends GrpoError {
	constructor(
		readonly sequence: number,
		readonly position: number
	) {
		super(
			'missing-logprobs',
			`Sequence ${sequence} has no rollout logprob for its trained token at position ${position}. ` +
				'Sample with logprobs (every choice of the local engine carries them), or set ' +
				'allowMissingLogprobs to treat such tokens as on-policy (ratio 1).'
		);
		this.name = 'MissingLogprobsError';
	}
}

/** A TrainSequence is malformed: lengths disagree, an id is not a token id, a flag is
 * set on the first token (which no position predicts), a non-finite advantage. */
export class InvalidSequenceError extends GrpoError {
	constructor(
		readonly sequence: number,
		detail: string
	) {
		super('invalid-sequence', `Train sequence ${sequence}: ${detail}`);
		this.name = 'InvalidSequenceError';
	}
}

/** A loss batch is inconsistent (grid sizes, a non-finite new logprob at a trained token). */
export class InvalidBatchError extends GrpoError {
	constructor(detail: string) {
		super('invalid-batch', `GRPO loss batch: ${detail}`);
		this.name = 'InvalidBatchError';
	}
}

/** A configuration value is out of range or inconsistent. */
export class GrpoConfigError extends GrpoError {
	constructor(detail: string) {
		super('grpo-config', `GRPO config: ${detail}`);
		this.name = 'GrpoConfigError';
	}
}

/** A saved checkpoint cannot be read: a file missing, bad JSON, wrong sizes. */
export class CheckpointCorruptError extends GrpoError {
	/** What is wrong and where, without the advice: "Checkpoint WHERE: DETAIL". */
	readonly problem: string;
	constructor(where: string, detail: string) {
		const problem = `Checkpoint ${where}: ${detail.replace(/\.+$/, '')}`;
		super(
			'checkpoint-corrupt',
			`${problem}. The other checkpoints of the run are untouched; ` +
				'delete this one or resume from an earlier step.'
		);
		this.problem = problem;
		this.name = 'CheckpointCorruptError';
	}
}

/** A checkpoint or adapter made for another base model, rank or set of target modules. */
export class AdapterMismatchError extends GrpoError {
	constructor(detail: string) {
		super('adapter-mismatch', `Adapter mismatch: ${detail}`);
		this.name = 'AdapterMismatchError';
	}
}

/**
 * Another writer holds the run: another live process (the lock file names it), another
 * tab (the browser's Web Lock), or another store in this process. Two writers would
 * interleave the run's history and checkpoints.
 */
export class RunLockedError extends GrpoError {
	constructor(
		/** The lock: a file on disk, a Web Lock's name in the browser. */
		readonly lock: string,
		/** Who holds it, in words (e.g. 'process 1234 on box since ...'). */
		readonly owner: string,
		remedy = 'Stop that writer or use another run.'
	) {
		super('run-locked', `The run is being written by ${owner} (lock ${lock}). ${remedy}`);
		this.name = 'RunLockedError';
	}
}

/**
 * A file given to import as a run is not one TabRL can take: not a zip, not a run's zip
 * (run-archive.ts), made by a newer TabRL, damaged, or too large. Nothing is written.
 */
export class RunArchiveError extends GrpoError {
	constructor(problem: string) {
		super('invalid-run-archive', `This file cannot be imported as a run: ${problem}`);
		this.name = 'RunArchiveError';
	}
}

/**
 * The browser refused a write for lack of space (IndexedDB's QuotaExceededError): what was
 * saved before stays (the write was one transaction), this write is not there.
 */
export class StorageFullError extends GrpoError {
	constructor(what: string) {
		super(
			'storage-full',
			`The browser's storage for this site is full, so ${what} could not be saved (what was saved before is kept). ` +
				'Export the saved runs you want to keep, delete the ones you do not need (Saved runs), then resume.'
		);
		this.name = 'StorageFullError';
	}
}

/** `write`, with the browser's out-of-space refusal turned into a StorageFullError. */
export async function storageWrite<T>(what: string, write: () => Promise<T>): Promise<T> {
	try {
		return await write();
	} catch (error) {
		const name = (error as { name?: unknown })?.name;
		if (name === 'QuotaExceededError') throw new StorageFullError(what);
		// (a transaction aborted for lack of space reports an AbortError whose cause is the quota)
		const inner = (error as { target?: { error?: { name?: unknown } } })?.target?.error?.name;
		if (inner === 'QuotaExceededError') throw new StorageFullError(what);
		throw error;
	}
}
