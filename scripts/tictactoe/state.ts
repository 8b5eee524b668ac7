/**
 * @file A learn-tictactoe run's resumable state as a few flat files, for machines that do not
 * keep a disk between calls (the GPU machine comes back bare after it goes idle): the report,
 * the log, history.jsonl and the latest checkpoint (PEFT adapter, optimizer moments, trainer
 * state). The model folder is not part of it: make-model.ts writes the same files from its
 * seed, and the run writes them again when they are missing.
 *
 *   DEST/report.json  DEST/log.txt  DEST/history.jsonl  DEST/checkpoint-<step>/<4 files>
 *
 * 7 files, one folder deep (the device's $OUT returns at most 8 files, 2 folders deep, 16 MiB
 * each: LoRA r 64 at hidden 256 has 15.7 MB of optimizer moments, its largest file).
 */
import { copyFile, mkdir, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { checkpointName } from '../../src/lib/grpo/run-store';

const exists = (p: string) =>
	stat(p).then(
		() => true,
		() => false
	);

const FLAT = [
	['report.json', 'report.json'],
	['log.txt', 'log.txt'],
	['run/history.jsonl', 'history.jsonl']
] as const;

/** The latest checkpoint folder's step under `out`/run/checkpoints, if any. */
async function latestCheckpoint(out: string): Promise<number | undefined> {
	const dir = join(out, 'run', 'checkpoints');
	if (!(await exists(dir))) return undefined;
	const steps = (await readdir(dir)).filter((n) => /^\d+$/.test(n)).map(Number);
	return steps.length ? Math.max(...steps) : undefined;
}

/** Copies the run's state in `out` to `dest`; returns the files written. */
export async function saveState(out: string, dest: string): Promise<string[]> {
	await mkdir(dest, { recursive: true });
	const written: string[] = [];
	for (const [from, to] of FLAT)
		if (await exists(join(out, from))) {
			await copyFile(join(out, from), join(dest, to));
			written.push(to);
		}
	const step = await latestCheckpoint(out);
	if (step !== undefined) {
		const src = join(out, 'run', 'checkpoints', checkpointName(step));
		const to = `checkpoint-${checkpointName(step)}`;
		await mkdir(join(dest, to), { recursive: true });
		for (const f of await readdir(src)) {
			await copyFile(join(src, f), join(dest, to, f));
			written.push(`${to}/${f}`);
		}
	}
	return written;
}

/**
 * Restores a state saved by saveState into `out` when `out` has no report yet and `src`
 * has one; returns whether it did (false: nothing to restore, or `out` is already a run).
 */
export async function loadState(src: string, out: string): Promise<boolean> {
	if ((await exists(join(out, 'report.json'))) || !(await exists(join(src, 'report.json'))))
		return false;
	await mkdir(join(out, 'run', 'checkpoints'), { recursive: true });
	for (const [to, from] of FLAT)
		if (await exists(join(src, from))) await copyFile(join(src, from), join(out, to));
	for (const name of await readdir(src)) {
		const m = /^checkpoint-(\d+)$/.exec(name);
		if (!m) continue;
		const dir = join(out, 'run', 'checkpoints', checkpointName(Number(m[1])));
		await mkdir(dir, { recursive: true });
		for (const f of await readdir(join(src, name)))
			await copyFile(join(src, name, f), join(dir, f));
	}
	return true;
}
