/**
 * `cli train` SIGKILLed at named points of its saves (TABRL_PAUSE_AT), then run again on the
 * same --out: a second train meanwhile is 'run-locked'; the next takes the dead lock over,
 * a torn history line is reported and rewritten away, step 1's line restored once, SFT
 * continues at step 2; killed before a rename, the temp folder is removed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeFixture } from '../../../src/lib/testing/fixtures';
import { writeModelFiles } from '../../../src/lib/model/hf/node/checkpoint';
import { runCli } from './run-cli';

const ROOT = join(import.meta.dirname, '../../..');
const CLI = join(ROOT, 'scripts/cli.ts');
const TIMEOUT = 120_000;

let root: string;
let llama: string;
const alive = new Set<number>();

beforeAll(async () => {
	root = await mkdtemp(join(tmpdir(), 'tabrl-train-crash-'));
	llama = join(root, 'llama');
	await writeModelFiles(llama, makeFixture('llama', { seed: 5 }).files);
});
afterAll(async () => {
	for (const pid of alive) process.kill(pid, 'SIGKILL');
	await rm(root, { recursive: true, force: true });
});

/** Two SFT steps of one demonstration each, no GRPO: every step trains and checkpoints. */
const sftArgs = (out: string) => [
	'train',
	...['--env', 'tictactoe', '--model', llama, '--warm-start', 'none', '--sft-first', '2'],
	...['--groups', '1', '--steps', '0', '--eval-every', '0', '--out', out]
];

interface Paused {
	child: ChildProcess;
	stderr: () => string;
	pid: number;
}

/** Runs the CLI with TABRL_PAUSE_AT=`at` until it says it paused there. */
function runUntilPaused(args: string[], at: string): Promise<Paused> {
	const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], {
		cwd: ROOT,
		env: { ...process.env, TABRL_PAUSE_AT: at },
		stdio: ['ignore', 'pipe', 'pipe']
	});
	alive.add(child.pid!);
	let stderr = '';
	return new Promise((resolve, reject) => {
		child.stderr!.on('data', (d: Buffer) => {
			stderr += d.toString();
			const m = new RegExp(`^tabrl: paused at ${at} \\(pid (\\d+)\\)$`, 'm').exec(stderr);
			if (m) resolve({ child, stderr: () => stderr, pid: Number(m[1]) });
		});
		child.on('exit', (code) => {
			alive.delete(child.pid!);
			reject(new Error(`exited ${code} before pausing at ${at}:\n${stderr}`));
		});
	});
}

/** SIGKILL, and the exit seen. */
async function kill(p: Paused): Promise<void> {
	const exited = new Promise((resolve) => p.child.once('exit', resolve));
	process.kill(p.pid, 'SIGKILL');
	await exited;
}

const historyLines = async (out: string) =>
	(await readFile(join(out, 'history.jsonl'), 'utf8').catch(() => '')).split('\n');

describe.concurrent('cli train killed mid-save', () => {
	it(
		'one writer; a lost history line restored, a torn one reported, SFT resumed in SFT',
		async () => {
			const out = join(root, 'run');
			const args = sftArgs(out);

			const first = await runUntilPaused(args, 'checkpoint-renamed:1');
			const lock = JSON.parse(await readFile(join(out, 'run.lock'), 'utf8'));
			expect(lock.pid).toBe(first.pid);
			const second = await runCli(args, TIMEOUT);
			expect(second.code, second.stderr).toBe(1);
			expect(second.stdout).toBe('');
			expect(second.stderr).toMatch(
				new RegExp(`^tabrl: run-locked: The run is being written by process ${first.pid} `, 'm')
			);
			await kill(first);
			// the checkpoint is in place, its line not in history.jsonl, the lock stale
			expect(await readdir(join(out, 'checkpoints'))).toEqual(['0000', '0001']);
			expect((await historyLines(out)).some((l) => l.includes('"step":1'))).toBe(false);

			// the lock taken over; killed halfway through appending step 1's restored line
			const third = await runUntilPaused(args, 'history-append:1');
			expect(third.stderr()).toMatch(
				new RegExp(`^warning: took over the lock of process ${first.pid} `, 'm')
			);
			await kill(third);
			const torn = await historyLines(out);
			expect(torn).toHaveLength(1);
			expect(() => JSON.parse(torn[0])).toThrow();

			// reported by line number and rewritten away, step 1's restored once, SFT goes on at 2
			const fourth = await runUntilPaused(args, 'sft-step:2');
			expect(fourth.stderr()).toMatch(/^warning: .*history\.jsonl line 1 is not JSON/m);
			expect(fourth.stderr()).toMatch(/^warning: history\.jsonl lacked step 1's line/m);
			expect(fourth.stderr()).toMatch(/continuing at step 1\)/);
			await kill(fourth);
			// the torn line is gone (the file rewritten): history.jsonl parses line by line
			expect(fourth.stderr()).toMatch(/^warning: rewrote history\.jsonl without its line 1 /m);
			const lines = (await historyLines(out)).filter((l) => l.trim());
			expect(lines).toHaveLength(1);
			const step1 = JSON.parse(lines[0]);
			expect(step1).toMatchObject({ step: 1, 'sft/epoch': 0 });
			expect(Number.isFinite(step1['sft/loss'])).toBe(true);
		},
		TIMEOUT * 3
	);

	it(
		'a save killed before its rename: the next call removes the temp folder',
		async () => {
			const out = join(root, 'temp');
			const args = sftArgs(out);
			// a new run saves step 0 as it registers
			const first = await runUntilPaused(args, 'checkpoint-files:0');
			await kill(first);
			const left = await readdir(join(out, 'checkpoints'));
			expect(left).toHaveLength(1);
			expect(left[0]).toMatch(/^\.tmp-0000-/);

			const second = await runUntilPaused(args, 'sft-step:1');
			expect(second.stderr()).toMatch(
				new RegExp(`^warning: removed checkpoints/${left[0]}, left by a save that crashed`, 'm')
			);
			await kill(second);
			expect(await readdir(join(out, 'checkpoints'))).toEqual(['0000']);
			expect(existsSync(join(out, 'checkpoints', left[0]))).toBe(false);
		},
		TIMEOUT * 2
	);
});
