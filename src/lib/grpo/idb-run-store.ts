/**
 * @file A run in the browser's IndexedDB (through `idb`), the browser twin of
 * node-run-store.ts. One database for every run; runs are told apart by a run id (e.g.
 * `${project}/${name}`):
 *
 *   checkpoints  key [run, step] -> { run, step, files: Map<name, Uint8Array> }
 *   history      auto key        -> { run, entry }   (index 'run')
 *
 * A checkpoint is one record written in one transaction, so it is there whole or not at
 * all: a tab closed mid-save leaves the run's earlier checkpoints as they were. IndexedDB
 * outlives the tab; the next page that opens the run id resumes it.
 */
import { openDB, type DBSchema, type IDBPDatabase } from 'idb';
import { CheckpointCorruptError } from './errors';
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
		readonly db: IDBPDatabase<RunsSchema>
	) {}

	static async open(run: string): Promise<IdbRunStore> {
		return new IdbRunStore(run, await openRunsDb());
	}

	#range(): IDBKeyRange {
		return IDBKeyRange.bound([this.run, -Infinity], [this.run, Infinity]);
	}

	async listCheckpoints(): Promise<number[]> {
		const keys = await this.db.getAllKeys('checkpoints', this.#range());
		return keys.map((k) => k[1]).sort((a, b) => a - b);
	}

	async saveCheckpoint(step: number, files: ReadonlyMap<string, Uint8Array>): Promise<void> {
		await this.db.put('checkpoints', { run: this.run, step, files: new Map(files) });
	}

	async loadCheckpoint(step: number): Promise<Map<string, Uint8Array>> {
		const record = await this.db.get('checkpoints', [this.run, step]);
		if (!record)
			throw new CheckpointCorruptError(
				`${this.run}/checkpoints/${checkpointName(step)}`,
				'there is no checkpoint of this step'
			);
		return new Map(record.files);
	}

	async deleteCheckpoint(step: number): Promise<void> {
		await this.db.delete('checkpoints', [this.run, step]);
	}

	async appendHistory(entry: Record<string, unknown>): Promise<void> {
		await this.db.add('history', { run: this.run, entry });
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
		await this.db.put('runs', { run: this.run, meta });
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
	}
}
