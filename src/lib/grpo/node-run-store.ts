/**
 * @file Node only (node:fs): a run on disk, laid out as ART lays out a model's folder:
 *
 *   DIR/history.jsonl                 one JSON line per step (appended)
 *   DIR/checkpoints/0003/...          the files of step 3's checkpoint (checkpoint.ts)
 *
 * A checkpoint is written into `checkpoints/.tmp-<step>-<pid>-<n>/` and renamed into place
 * (rename is atomic on one file system), so a crash leaves at most a temp folder, which
 * listing ignores and the next save of that step clears. A torn last history line (a crash
 * mid-append) is skipped on reading with a warning.
 */
import { appendFile, mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CheckpointCorruptError } from './errors';
import { checkpointName, type RunMeta, type RunStore } from './run-store';

const HISTORY_FILE = 'history.jsonl';
const isMissing = (error: unknown) => (error as { code?: string }).code === 'ENOENT';
let tempCounter = 0;

export class NodeRunStore implements RunStore {
	readonly checkpointsDir: string;
	/** Problems met while reading (torn history lines), for the caller to show. */
	readonly warnings: string[] = [];
	#tailChecked = false;

	constructor(readonly dir: string) {
		this.checkpointsDir = join(dir, 'checkpoints');
	}

	async listCheckpoints(): Promise<number[]> {
		const names = await readdir(this.checkpointsDir).catch((error) => {
			if (isMissing(error)) return [] as string[];
			throw error;
		});
		return names
			.filter((n) => /^\d+$/.test(n))
			.map(Number)
			.sort((a, b) => a - b);
	}

	async saveCheckpoint(step: number, files: ReadonlyMap<string, Uint8Array>): Promise<void> {
		const final = join(this.checkpointsDir, checkpointName(step));
		const temp = join(
			this.checkpointsDir,
			`.tmp-${checkpointName(step)}-${process.pid}-${tempCounter++}`
		);
		await mkdir(temp, { recursive: true });
		try {
			for (const [name, bytes] of files) await writeFile(join(temp, name), bytes);
			// Replacing a step's checkpoint: move the old one aside first (rename cannot
			// replace a non-empty folder), then drop it once the new one is in place.
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
		for (const name of names) files.set(name, new Uint8Array(await readFile(join(dir, name))));
		return files;
	}

	async deleteCheckpoint(step: number): Promise<void> {
		await rm(join(this.checkpointsDir, checkpointName(step)), { recursive: true, force: true });
	}

	async appendHistory(entry: Record<string, unknown>): Promise<void> {
		await mkdir(this.dir, { recursive: true });
		const file = join(this.dir, HISTORY_FILE);
		// After a torn write the file ends mid-line: start the new line on a line of its own.
		let prefix = '';
		if (!this.#tailChecked) {
			const text = await readFile(file, 'utf8').catch(() => '');
			if (text && !text.endsWith('\n')) prefix = '\n';
			this.#tailChecked = true;
		}
		await appendFile(file, prefix + JSON.stringify(entry) + '\n');
	}

	async readHistory(): Promise<Record<string, unknown>[]> {
		let text: string;
		try {
			text = await readFile(join(this.dir, HISTORY_FILE), 'utf8');
		} catch (error) {
			if (isMissing(error)) return [];
			throw error;
		}
		const out: Record<string, unknown>[] = [];
		text.split('\n').forEach((line, i) => {
			if (!line.trim()) return;
			try {
				out.push(JSON.parse(line) as Record<string, unknown>);
			} catch {
				this.warnings.push(`${HISTORY_FILE} line ${i + 1} is not JSON (a torn write?); skipped`);
			}
		});
		return out;
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

/** The run's summary record (RunMeta), beside history.jsonl. */
export const META_FILE = 'run.json';
