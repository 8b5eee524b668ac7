/**
 * @file A run in the browser's IndexedDB, the twin of node/run-store.ts: one database,
 * runs told apart by id; checkpoints keyed [run, step] (sealed, checked on load) and
 * history lines. A checkpoint and its step's line are one transaction: a tab closed
 * mid-save leaves the run as it was. A writer holds the Web Lock `tabrl-run:<run>` until
 * close(), so a second writing tab is a RunLockedError.
 */
import { openDB, type DBSchema, type IDBPDatabase } from 'idb';
import { sealCheckpoint, verifyCheckpoint } from './checkpoint-seal';
import { CheckpointCorruptError, RunLockedError, storageWrite } from '../errors';
import { checkpointName, type RunMeta, type RunStore } from './run-store';

export const RUNS_DB_NAME = 'tabrl-runs';
const DB_VERSION = 2;

interface CheckpointRecord {
	run: string;
	step: number;
	files: Map<string, Uint8Array>;
}

interface RunsSchema extends DBSchema {
	checkpoints: { key: [string, number]; value: CheckpointRecord };
	history: {
		key: number;
		value: { run: string; entry: Record<string, unknown> };
		indexes: { run: string };
	};
	/** Added in version 2: one summary per run id (RunMeta), for listing runs. */
	runs: { key: string; value: { run: string; meta: RunMeta } };
}

function openRunsDb(): Promise<IDBPDatabase<RunsSchema>> {
	return openDB<RunsSchema>(RUNS_DB_NAME, DB_VERSION, {
		upgrade(db, oldVersion) {
			if (oldVersion < 1) {
				db.createObjectStore('checkpoints', { keyPath: ['run', 'step'] });
				const history = db.createObjectStore('history', { autoIncrement: true });
				history.createIndex('run', 'run');
			}
			if (oldVersion < 2) db.createObjectStore('runs', { keyPath: 'run' });
		}
	});
}

export class IdbRunStore implements RunStore {
	private constructor(
		readonly run: string,
		readonly db: IDBPDatabase<RunsSchema>,
		readonly releaseLock?: () => void
	) {}

	/** A reader's store, or with `write` the run's writer (its Web Lock taken, or a RunLockedError). */
	static async open(run: string, options: { write?: boolean } = {}): Promise<IdbRunStore> {
		const release = options.write ? await takeWebLock(`tabrl-run:${run}`) : undefined;
		try {
			return new IdbRunStore(run, await openRunsDb(), release);
		} catch (error) {
			release?.();
			throw error;
		}
	}

	#range(): IDBKeyRange {
		return IDBKeyRange.bound([this.run, -Infinity], [this.run, Infinity]);
	}

	async listCheckpoints(): Promise<number[]> {
		const keys = await this.db.getAllKeys('checkpoints', this.#range());
		return keys.map((k) => k[1]).sort((a, b) => a - b);
	}

	async saveCheckpoint(
		step: number,
		files: ReadonlyMap<string, Uint8Array>,
		historyEntry?: Record<string, unknown>
	): Promise<void> {
		// one transaction: the checkpoint and its history line commit together
		const sealed = await sealCheckpoint(files);
		await storageWrite(`the checkpoint of step ${step}`, async () => {
			const tx = this.db.transaction(['checkpoints', 'history'], 'readwrite');
			await tx.objectStore('checkpoints').put({ run: this.run, step, files: sealed });
			if (historyEntry) await tx.objectStore('history').add({ run: this.run, entry: historyEntry });
			await tx.done;
		});
	}

	async loadCheckpoint(step: number): Promise<Map<string, Uint8Array>> {
		const where = `${this.run}/checkpoints/${checkpointName(step)}`;
		const record = await this.db.get('checkpoints', [this.run, step]);
		if (!record) throw new CheckpointCorruptError(where, 'there is no checkpoint of this step');
		return verifyCheckpoint(record.files, where);
	}

	async deleteCheckpoint(step: number): Promise<void> {
		await this.db.delete('checkpoints', [this.run, step]);
	}

	async setAsideCheckpoint(step: number): Promise<string> {
		await this.deleteCheckpoint(step);
		return 'deleted';
	}

	async rewriteHistory(entries: readonly Record<string, unknown>[]): Promise<void> {
		await storageWrite('the repaired history', async () => {
			const tx = this.db.transaction('history', 'readwrite');
			const store = tx.objectStore('history');
			for (const key of await store.index('run').getAllKeys(this.run)) await store.delete(key);
			for (const entry of entries) await store.add({ run: this.run, entry });
			await tx.done;
		});
	}

	warn(message: string): void {
		console.warn(`tabrl: ${message}`);
	}

	async appendHistory(entry: Record<string, unknown>): Promise<void> {
		await storageWrite('a history line', () => this.db.add('history', { run: this.run, entry }));
	}

	async readHistory(): Promise<Record<string, unknown>[]> {
		// Keys increase with insertion, so the index returns entries in the order added.
		const rows = await this.db.getAllFromIndex('history', 'run', this.run);
		return rows.map((r) => r.entry);
	}

	async readMeta(): Promise<RunMeta | undefined> {
		return (await this.db.get('runs', this.run))?.meta;
	}

	async writeMeta(meta: RunMeta): Promise<void> {
		await storageWrite("the run's summary", () => this.db.put('runs', { run: this.run, meta }));
	}

	/** Every run id with a summary, and the summary. */
	static async listRuns(): Promise<{ run: string; meta: RunMeta }[]> {
		const db = await openRunsDb();
		try {
			return await db.getAll('runs');
		} finally {
			db.close();
		}
	}

	/** Deletes a run whole (summary, history, checkpoints) in one transaction. */
	static async deleteRun(run: string): Promise<void> {
		const db = await openRunsDb();
		try {
			const tx = db.transaction(['runs', 'history', 'checkpoints'], 'readwrite');
			await tx.objectStore('runs').delete(run);
			const keys = await tx.objectStore('history').index('run').getAllKeys(run);
			for (const key of keys) await tx.objectStore('history').delete(key);
			await tx
				.objectStore('checkpoints')
				.delete(IDBKeyRange.bound([run, -Infinity], [run, Infinity]));
			await tx.done;
		} finally {
			db.close();
		}
	}

	close(): void {
		this.db.close();
		this.releaseLock?.();
	}
}

/**
 * Takes the Web Lock `name` if no one holds it; returns its release. Without Web Locks (an
 * old browser, Node) there is nothing to take: one writer is then the caller's care.
 */
async function takeWebLock(name: string): Promise<(() => void) | undefined> {
	const locks = (globalThis as { navigator?: { locks?: LockManager } }).navigator?.locks;
	if (!locks) return undefined;
	let release!: () => void;
	const held = new Promise<void>((resolve) => (release = resolve));
	const got = await new Promise<boolean>((resolve, reject) => {
		locks
			.request(name, { ifAvailable: true }, async (lock) => {
				resolve(lock !== null);
				if (lock) await held;
			})
			.catch(reject);
	});
	if (!got)
		throw new RunLockedError(
			name,
			'another tab of this site',
			'Stop the run in that tab (or close it), then start again.'
		);
	return release;
}
