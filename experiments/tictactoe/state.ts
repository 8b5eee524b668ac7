/**
 * @file A learn-tictactoe run's resumable state as a few flat files, for machines that do not
 * keep a disk between calls (the GPU machine comes back bare after it goes idle): the report,
 * the log, the history and the latest checkpoint (PEFT adapter, optimizer moments, trainer
 * state). The model folders are not part of it: scripts/tictactoe-model.ts writes the same
 * files from its seed, and --grpo-base sft-merged merges SFT's adapter into them again
 * (merge-sft.ts).
 *
 *   DEST/report.json  DEST/log.txt  DEST/history.jsonl  DEST/checkpoint-<step>/<4 files>
 *   with --grpo-base sft-merged, once SFT is merged: DEST/sft-adapter/<2 files> (instead of
 *   SFT's checkpoint), DEST/grpo-history.jsonl, DEST/grpo-checkpoint-<step>/<4 files>
 *
 * (LoRA r 64 at hidden 256: 7.9 MB per adapter, 15.7 MB of optimizer moments.)
 */
import { copyFile, mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { checkpointName } from '../../src/lib/grpo/store/run-store';
import { ADAPTER_WEIGHTS_FILE } from '../../src/lib/model/hf/peft-adapter';
import { SFT_ADAPTER_DIR } from './merge-sft';
import { exists } from '../../scripts/exists';

const FLAT = [
	['report.json', 'report.json'],
	['log.txt', 'log.txt'],
	['run/history.jsonl', 'history.jsonl'],
	['run-grpo/history.jsonl', 'grpo-history.jsonl']
] as const;

/** Run folders under OUT and the prefix of their checkpoint in the state. */
const RUNS = [
	['run', 'checkpoint-'],
	['run-grpo', 'grpo-checkpoint-']
] as const;

/** The latest checkpoint folder's step under `out`/`run`/checkpoints, if any. */
export async function latestCheckpoint(out: string, run: string): Promise<number | undefined> {
	const dir = join(out, run, 'checkpoints');
	if (!(await exists(dir))) return undefined;
	const steps = (await readdir(dir)).filter((n) => /^\d+$/.test(n)).map(Number);
	return steps.length ? Math.max(...steps) : undefined;
}

async function copyDir(from: string, to: string): Promise<string[]> {
	await mkdir(to, { recursive: true });
	const files = await readdir(from);
	for (const f of files) await copyFile(join(from, f), join(to, f));
	return files;
}

/** Replaces `dest` with the run's state in `out`; returns the files written. */
export async function saveState(out: string, dest: string): Promise<string[]> {
	// (an earlier call's checkpoints would pile up beside this one's)
	await rm(dest, { recursive: true, force: true });
	await mkdir(dest, { recursive: true });
	const written: string[] = [];
	for (const [from, to] of FLAT)
		if (await exists(join(out, from))) {
			await copyFile(join(out, from), join(dest, to));
			written.push(to);
		}
	const merged = await exists(join(out, SFT_ADAPTER_DIR, ADAPTER_WEIGHTS_FILE));
	if (merged)
		for (const f of await copyDir(join(out, SFT_ADAPTER_DIR), join(dest, SFT_ADAPTER_DIR)))
			written.push(`${SFT_ADAPTER_DIR}/${f}`);
	for (const [run, prefix] of RUNS) {
		// SFT's checkpoint is not needed once its adapter is kept (merged)
		if (run === 'run' && merged) continue;
		const step = await latestCheckpoint(out, run);
		if (step === undefined) continue;
		const to = `${prefix}${checkpointName(step)}`;
		for (const f of await copyDir(
			join(out, run, 'checkpoints', checkpointName(step)),
			join(dest, to)
		))
			written.push(`${to}/${f}`);
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
	for (const [run] of RUNS) await mkdir(join(out, run, 'checkpoints'), { recursive: true });
	for (const [to, from] of FLAT)
		if (await exists(join(src, from))) await copyFile(join(src, from), join(out, to));
	if (await exists(join(src, SFT_ADAPTER_DIR)))
		await copyDir(join(src, SFT_ADAPTER_DIR), join(out, SFT_ADAPTER_DIR));
	for (const name of await readdir(src))
		for (const [run, prefix] of RUNS) {
			const m = new RegExp(`^${prefix}(\\d+)$`).exec(name);
			if (m)
				await copyDir(join(src, name), join(out, run, 'checkpoints', checkpointName(Number(m[1]))));
		}
	return true;
}
