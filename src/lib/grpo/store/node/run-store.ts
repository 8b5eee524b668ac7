/**
 * @file Node only: a run on disk as ART lays out a model folder: run.lock, run.json,
 * history.jsonl, checkpoints/NNNN/ (sealed, with history-line.json). A checkpoint is written
 * to a temp folder and renamed, then its line appended, so a kill leaves the step absent or
 * whole (its line re-appended at the next open). `open` takes the lock, removes temp
 * folders and rewrites history without torn lines; `new NodeRunStore(dir)` only reads.
 */
import {
	appendFile,
	mkdir,
	readdir,
	readFile,
	rename,
	rm,
	rmdir,
	writeFile
} from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { sealCheckpoint, verifyCheckpoint } from '../checkpoint-seal';
import { CheckpointCorruptError } from '../../errors';
import { pauseForever, pausePoint, pauseRequested } from '../../pause-point';
import { RunLock } from './run-lock';
import {
	CHECKPOINTS_DIR,
	checkpointName,
	HISTORY_FILE,
	META_FILE,
	type RunMeta,
	type RunStore
} from '../run-store';

/** A step's history line inside its checkpoint folder (committed with it). */
export const HISTORY_LINE_FILE = 'history-line.json';
const TEMP_PREFIX = '.tmp-';
const isMissing = (error: unknown) => (error as { code?: string }).code === 'ENOENT';
let tempCounter = 0;

export interface NodeRunStoreOptions {
	/** Problems found and repaired (torn lines, a stale lock, a restored line); default console.warn. */
	onWarning?: (message: string) => void;
}

export class NodeRunStore implements RunStore {
	readonly checkpointsDir: string;
	/** Every warning given (also sent to onWarning). */
	readonly warnings: string[] = [];
	readonly #onWarning: (message: string) => void;
	/** history.jsonl lines already reported as torn (1-based). */
	readonly #reported = new Set<number>();
	#tailChecked = false;
	#lock: RunLock | undefined;
	/** The first folder open() created (mkdir's answer), when it created any. */
	#created: string | undefined;

	constructor(
		readonly dir: string,
		options: NodeRunStoreOptions = {}
	) {
		this.checkpointsDir = join(dir, CHECKPOINTS_DIR);
		this.#onWarning = options.onWarning ?? ((m) => console.warn(`tabrl: ${m}`));
	}

	/** The run's writer: lock, temp folders removed, history repaired (see the file's comment). */
	static async open(dir: string, options: NodeRunStoreOptions = {}): Promise<NodeRunStore> {
		const created = await mkdir(dir, { recursive: true });
		const lock = await RunLock.acquire(dir);
		const store = new NodeRunStore(dir, options);
		store.#lock = lock;
		store.#created = created;
		try {
			if (lock.tookOver) store.warn(`took over the lock of ${lock.tookOver}: that process is gone`);
			await store.#removeTemps();
			await store.#repairHistory();
		} catch (error) {
			await lock.release();
			throw error;
		}
		return store;
	}

	/**
	 * Releases the lock (a writer's); the store may still be read. A folder this open made
	 * and nothing was written into (a registration refused) is removed: refused, it leaves
	 * nothing behind.
	 */
	async close(): Promise<void> {
		await this.#lock?.release();
		if (this.#created === undefined) return;
		// rmdir fails on a folder that holds anything: only empty folders go, innermost first
		for (let d = resolve(this.dir); ; d = dirname(d)) {
			if (
				!(await rmdir(d).then(
					() => true,
					() => false
				))
			)
				break;
			if (d === resolve(this.#created)) break;
		}
		this.#created = undefined;
	}

	warn(message: string): void {
		this.warnings.push(message);
		this.#onWarning(message);
	}

	async listCheckpoints(): Promise<number[]> {
		return (await this.#checkpointEntries())
			.filter((n) => /^\d+$/.test(n))
			.map(Number)
			.sort((a, b) => a - b);
	}

	async #checkpointEntries(): Promise<string[]> {
		return readdir(this.checkpointsDir).catch((error) => {
			if (isMissing(error)) return [] as string[];
			throw error;
		});
	}

	async saveCheckpoint(
		step: number,
		files: ReadonlyMap<string, Uint8Array>,
		historyEntry?: Record<string, unknown>
	): Promise<void> {
		const final = join(this.checkpointsDir, checkpointName(step));
		const temp = join(
			this.checkpointsDir,
			`${TEMP_PREFIX}${checkpointName(step)}-${process.pid}-${tempCounter++}`
		);
		const line = historyEntry === undefined ? undefined : JSON.stringify(historyEntry);
		const sealed = await sealCheckpoint(files);
		await mkdir(temp, { recursive: true });
		try {
			for (const [name, bytes] of sealed) await writeFile(join(temp, name), bytes);
			if (line !== undefined) await writeFile(join(temp, HISTORY_LINE_FILE), line + '\n');
			await pausePoint('checkpoint-files', step);
			// Replacing a step's checkpoint: move the old one aside first (rename cannot
			// replace a non-empty folder), then drop it once the new one is in place (a kill
			// in between: the next open moves it back).
			const old = `${temp}-old`;
			const hadOld = await rename(final, old).then(
				() => true,
				(error) => {
					if (isMissing(error)) return false;
					throw error;
				}
			);
			await rename(temp, final);
			if (hadOld) await rm(old, { recursive: true, force: true });
		} catch (error) {
			await rm(temp, { recursive: true, force: true });
			throw error;
		}
		await pausePoint('checkpoint-renamed', step);
		if (line !== undefined) await this.#appendLine(line, step);
	}

	async loadCheckpoint(step: number): Promise<Map<string, Uint8Array>> {
		const dir = join(this.checkpointsDir, checkpointName(step));
		let names: string[];
		try {
			names = await readdir(dir);
		} catch (error) {
			if (isMissing(error))
				throw new CheckpointCorruptError(dir, 'there is no checkpoint of this step');
			throw error;
		}
		const files = new Map<string, Uint8Array>();
		for (const name of names)
			if (name !== HISTORY_LINE_FILE)
				files.set(name, new Uint8Array(await readFile(join(dir, name))));
		return verifyCheckpoint(files, dir);
	}

	async deleteCheckpoint(step: number): Promise<void> {
		await rm(join(this.checkpointsDir, checkpointName(step)), { recursive: true, force: true });
	}

	async setAsideCheckpoint(step: number): Promise<string> {
		const taken = new Set(await this.#checkpointEntries());
		let name = `corrupt-${checkpointName(step)}`;
		for (let n = 2; taken.has(name); n++) name = `corrupt-${checkpointName(step)}-${n}`;
		await rename(join(this.checkpointsDir, checkpointName(step)), join(this.checkpointsDir, name));
		return `checkpoints/${name}`;
	}

	async rewriteHistory(entries: readonly Record<string, unknown>[]): Promise<void> {
		await mkdir(this.dir, { recursive: true });
		const file = join(this.dir, HISTORY_FILE);
		const tmp = `${file}.${process.pid}.tmp`;
		await writeFile(tmp, entries.map((e) => JSON.stringify(e) + '\n').join(''));
		await rename(tmp, file);
		this.#tailChecked = true; // (written whole: it ends with a newline)
		this.#reported.clear();
	}

	async appendHistory(entry: Record<string, unknown>): Promise<void> {
		const step = typeof entry.step === 'number' ? entry.step : -1;
		await this.#appendLine(JSON.stringify(entry), step);
	}

	async #appendLine(line: string, step: number): Promise<void> {
		await mkdir(this.dir, { recursive: true });
		const file = join(this.dir, HISTORY_FILE);
		// After a torn write the file ends mid-line: start the new line on a line of its own.
		let prefix = '';
		if (!this.#tailChecked) {
			const text = await readFile(file, 'utf8').catch(() => '');
			if (text && !text.endsWith('\n')) prefix = '\n';
			this.#tailChecked = true;
		}
		if (pauseRequested('history-append', step)) {
			await appendFile(file, prefix + line.slice(0, line.length >> 1));
			await pauseForever('history-append', step);
		}
		await appendFile(file, prefix + line + '\n');
	}

	async readHistory(): Promise<Record<string, unknown>[]> {
		return (await this.#readLines()).entries;
	}

	/**
	 * history.jsonl's entries, raw text and torn lines (1-based numbers); each torn line
	 * reported once.
	 */
	async #readLines(): Promise<{
		entries: Record<string, unknown>[];
		text: string;
		torn: number[];
	}> {
		let text: string;
		try {
			text = await readFile(join(this.dir, HISTORY_FILE), 'utf8');
		} catch (error) {
			if (isMissing(error)) return { entries: [], text: '', torn: [] };
			throw error;
		}
		const entries: Record<string, unknown>[] = [];
		const torn: number[] = [];
		text.split('\n').forEach((line, i) => {
			if (!line.trim()) return;
			try {
				const entry = JSON.parse(line) as unknown;
				if (!entry || typeof entry !== 'object' || Array.isArray(entry))
					throw new Error('not an object');
				entries.push(entry as Record<string, unknown>);
			} catch {
				torn.push(i + 1);
				if (this.#reported.has(i + 1)) return;
				this.#reported.add(i + 1);
				this.warn(
					`${join(this.dir, HISTORY_FILE)} line ${i + 1} is not JSON (a write cut by a crash?); ` +
						`skipped: ${JSON.stringify(line.length > 60 ? line.slice(0, 60) + '...' : line)}`
				);
			}
		});
		return { entries, text, torn };
	}

	/** Temp folders of a crashed save: removed, or (a replaced step's old copy) moved back. */
	async #removeTemps(): Promise<void> {
		for (const name of await this.#checkpointEntries()) {
			if (!name.startsWith(TEMP_PREFIX)) continue;
			const path = join(this.checkpointsDir, name);
			const step = /^\.tmp-(\d+)-.*-old$/.exec(name)?.[1];
			if (step !== undefined) {
				const final = join(this.checkpointsDir, step);
				const restored = await rename(path, final).then(
					() => true,
					() => false // the new copy made it into place: the old one goes
				);
				if (restored) {
					this.warn(`restored checkpoints/${step}, moved aside by a save that crashed`);
					continue;
				}
			}
			await rm(path, { recursive: true, force: true });
			this.warn(`removed checkpoints/${name}, left by a save that crashed`);
		}
	}

	/**
	 * Torn lines dropped (reported with their numbers, the file rewritten atomically from the
	 * lines that parse); each checkpoint's committed line appended if history.jsonl lacks it.
	 */
	async #repairHistory(): Promise<void> {
		const { entries, text, torn } = await this.#readLines();
		if (torn.length) {
			await this.rewriteHistory(entries);
			this.warn(
				`rewrote ${HISTORY_FILE} without its line${torn.length === 1 ? '' : 's'} ${torn.join(', ')} ` +
					`(not JSON: cut by a crash?); it parses line by line again`
			);
		}
		const lines = new Set(text.split('\n'));
		for (const step of await this.listCheckpoints()) {
			const where = join(this.checkpointsDir, checkpointName(step), HISTORY_LINE_FILE);
			const line = (await readFile(where, 'utf8').catch(() => '')).trim();
			if (!line || lines.has(line)) continue;
			await this.#appendLine(line, step);
			this.warn(
				`${HISTORY_FILE} lacked step ${step}'s line (a crash after its checkpoint): restored ` +
					`from checkpoints/${checkpointName(step)}`
			);
		}
	}

	async readMeta(): Promise<RunMeta | undefined> {
		let text: string;
		try {
			text = await readFile(join(this.dir, META_FILE), 'utf8');
		} catch {
			return undefined;
		}
		try {
			return JSON.parse(text) as RunMeta;
		} catch {
			throw new CheckpointCorruptError(join(this.dir, META_FILE), 'it is not JSON');
		}
	}

	async writeMeta(meta: RunMeta): Promise<void> {
		await mkdir(this.dir, { recursive: true });
		const tmp = join(this.dir, `${META_FILE}.tmp`);
		await writeFile(tmp, JSON.stringify(meta, null, 2) + '\n');
		await rename(tmp, join(this.dir, META_FILE));
	}
}
