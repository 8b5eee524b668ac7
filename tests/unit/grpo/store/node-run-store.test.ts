/**
 * A run's folder on disk when something goes wrong (no GPU): sealed checkpoints checked on
 * load (flipped, cut, added or missing files: a typed error naming the file); continuing
 * from the newest intact checkpoint; pruning that keeps an intact one; a torn history line
 * rewritten away; the lock of a zombie or reused pid taken over, a live holder named.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SEAL_FILE } from '../../../../src/lib/grpo/store/checkpoint-seal';
import { newestIntactCheckpoint } from '../../../../src/lib/grpo/store/checkpoint-recovery';
import { CheckpointCorruptError, RunLockedError } from '../../../../src/lib/grpo/errors';
import { NodeRunStore } from '../../../../src/lib/grpo/store/node/run-store';
import { pruneCheckpoints } from '../../../../src/lib/grpo/store/retention';
import { LOCK_FILE, RunLock } from '../../../../src/lib/grpo/store/node/run-lock';

let root: string;
let n = 0;
beforeAll(async () => {
	root = await mkdtemp(join(tmpdir(), 'tabrl-store-'));
});
afterAll(async () => {
	await rm(root, { recursive: true, force: true });
});

/** A writer's store on a new folder; its warnings collected. */
async function openStore(): Promise<{ store: NodeRunStore; dir: string; warnings: string[] }> {
	const dir = join(root, `run-${n++}`);
	const warnings: string[] = [];
	const store = await NodeRunStore.open(dir, { onWarning: (m) => warnings.push(m) });
	return { store, dir, warnings };
}

const bytes = (seed: number, length = 4096) =>
	Uint8Array.from({ length }, (_, i) => (i * 31 + seed * 7) & 255);
const files = (step: number) =>
	new Map([
		['adapter_model.safetensors', bytes(step)],
		['adapter_config.json', new TextEncoder().encode(`{"r": ${step}}`)]
	]);
const ckptFile = (dir: string, step: number, name: string) =>
	join(dir, 'checkpoints', String(step).padStart(4, '0'), name);

/** Flips `count` bytes of a file in place, from `at`. */
async function flip(path: string, at = 100, count = 64): Promise<void> {
	const b = new Uint8Array(await readFile(path));
	for (let i = at; i < at + count; i++) b[i] ^= 0xff;
	await writeFile(path, b);
}

describe('checkpoint seals', () => {
	it('a checkpoint is saved with its sha256 and loads back exactly, without the seal', async () => {
		const { store, dir } = await openStore();
		await store.saveCheckpoint(1, files(1), { step: 1 });
		const seal = JSON.parse(await readFile(ckptFile(dir, 1, SEAL_FILE), 'utf8'));
		expect(Object.keys(seal.files).sort()).toEqual([
			'adapter_config.json',
			'adapter_model.safetensors'
		]);
		expect(seal.files['adapter_model.safetensors'].sha256).toMatch(/^[0-9a-f]{64}$/);
		expect(await store.loadCheckpoint(1)).toEqual(files(1));
		await store.close();
	});

	it('flipped, cut, missing or added files are a checkpoint-corrupt error naming the file', async () => {
		const { store, dir } = await openStore();
		const cases: [string, (step: number) => Promise<void>, RegExp][] = [
			[
				'64 bytes flipped',
				(s) => flip(ckptFile(dir, s, 'adapter_model.safetensors')),
				/adapter_model\.safetensors: its sha256 is [0-9a-f]{16}…, [0-9a-f]{16}… was saved/
			],
			[
				'cut short',
				async (s) => {
					const p = ckptFile(dir, s, 'adapter_model.safetensors');
					await writeFile(p, (await readFile(p)).subarray(0, 1000));
				},
				/adapter_model\.safetensors: it has 1000 bytes, 4096 were saved/
			],
			[
				'missing',
				(s) => rm(ckptFile(dir, s, 'adapter_config.json')),
				/adapter_config\.json: the file is missing/
			],
			[
				'added',
				(s) => writeFile(ckptFile(dir, s, 'extra.bin'), 'x'),
				/extra\.bin: the file was not saved with the checkpoint/
			],
			[
				'a seal that is not JSON',
				(s) => writeFile(ckptFile(dir, s, SEAL_FILE), '{'),
				/checkpoint-sha256\.json: it is not JSON/
			]
		];
		let step = 1;
		for (const [what, damage, message] of cases) {
			await store.saveCheckpoint(step, files(step));
			await damage(step);
			const error = await store.loadCheckpoint(step).catch((e: unknown) => e);
			expect(error, what).toBeInstanceOf(CheckpointCorruptError);
			expect((error as CheckpointCorruptError).kind, what).toBe('checkpoint-corrupt');
			expect((error as Error).message, what).toMatch(message);
			step++;
		}
		await store.close();
	});

	it('a checkpoint saved before seals loads unchecked', async () => {
		const { store, dir } = await openStore();
		await store.saveCheckpoint(1, files(1));
		await rm(ckptFile(dir, 1, SEAL_FILE));
		expect(await store.loadCheckpoint(1)).toEqual(files(1));
		await store.close();
	});
});

describe('continuing from the newest intact checkpoint', () => {
	const decode = (f: Map<string, Uint8Array>) =>
		new TextDecoder().decode(f.get('adapter_config.json'));

	it('newer corrupt checkpoints are set aside and their history lines dropped, each said', async () => {
		const { store, dir, warnings } = await openStore();
		for (const step of [1, 2, 3, 4]) {
			await store.saveCheckpoint(step, files(step), { step, 'train/reward': step / 10 });
			await store.appendHistory({ step, 'val/reward': step });
		}
		await flip(ckptFile(dir, 4, 'adapter_model.safetensors'));
		await flip(ckptFile(dir, 3, 'adapter_config.json'), 0, 2);
		const found = await newestIntactCheckpoint(store, decode);
		expect(found).toEqual({ step: 2, checkpoint: '{"r": 2}' });
		expect(await store.listCheckpoints()).toEqual([1, 2]);
		expect((await readdir(join(dir, 'checkpoints'))).sort()).toEqual([
			'0001',
			'0002',
			'corrupt-0003',
			'corrupt-0004'
		]);
		expect((await store.readHistory()).map((h) => h.step)).toEqual([1, 1, 2, 2]);
		const text = await readFile(join(dir, 'history.jsonl'), 'utf8');
		expect(
			text
				.trim()
				.split('\n')
				.map((l) => JSON.parse(l).step)
		).toEqual([1, 1, 2, 2]);
		expect(warnings.join('\n')).toMatch(
			/skipped the checkpoint of step 4 \(Checkpoint .*0004\/adapter_model\.safetensors: its sha256 .*\): set aside \(checkpoints\/corrupt-0004\); the run continues from step 2/
		);
		expect(warnings.join('\n')).toMatch(/skipped the checkpoint of step 3 .*adapter_config\.json/);
		expect(warnings.join('\n')).toMatch(/dropped 4 history line\(s\) of the steps after 0002/);
		await store.close();
	});

	it('with none intact, the newest error is thrown and nothing is moved', async () => {
		const { store, dir } = await openStore();
		await store.saveCheckpoint(1, files(1), { step: 1 });
		await store.saveCheckpoint(2, files(2), { step: 2 });
		for (const step of [1, 2]) await flip(ckptFile(dir, step, 'adapter_model.safetensors'));
		await expect(newestIntactCheckpoint(store, decode)).rejects.toThrow(
			/0002\/adapter_model\.safetensors: its sha256/
		);
		expect(await store.listCheckpoints()).toEqual([1, 2]);
		expect((await store.readHistory()).map((h) => h.step)).toEqual([1, 2]);
		await store.close();
	});

	it('pruning reads the kept checkpoints first: a corrupt latest is set aside, the older ones kept', async () => {
		const { store, dir, warnings } = await openStore();
		for (const step of [1, 2, 3]) await store.saveCheckpoint(step, files(step), { step });
		expect(await pruneCheckpoints(store)).toEqual([1, 2]); // intact: only the latest stays
		for (const step of [4, 5]) await store.saveCheckpoint(step, files(step), { step });
		await flip(ckptFile(dir, 5, 'adapter_model.safetensors'));
		expect(await pruneCheckpoints(store)).toEqual([]);
		expect(await store.listCheckpoints()).toEqual([3, 4]);
		expect(warnings.at(-1)).toMatch(
			/the checkpoint of step 5 is corrupt .*: set aside \(checkpoints\/corrupt-0005\); the older checkpoints are kept/
		);
		expect(await pruneCheckpoints(store)).toEqual([3]);
		expect(await store.listCheckpoints()).toEqual([4]);
		// steps the run wrote or read back itself are not read again (large checkpoints cost
		// a read and a hash each): step 6 is trusted, step 4 pruned without reading 6
		const verified = new Set([6]);
		await store.saveCheckpoint(6, files(6), { step: 6 });
		await rm(ckptFile(dir, 6, 'adapter_config.json')); // (would fail a read)
		expect(await pruneCheckpoints(store, { verified })).toEqual([4]);
		expect(await store.listCheckpoints()).toEqual([6]);
		await store.close();
	});
});

describe('history repair', () => {
	it('torn lines are rewritten away at open (atomically), checkpoint lines restored, each said', async () => {
		const { store, dir } = await openStore();
		await store.saveCheckpoint(1, files(1), { step: 1, 'train/reward': 0.5 });
		await store.appendHistory({ step: 1, 'val/reward': 0.25 });
		await store.saveCheckpoint(2, files(2), { step: 2, 'train/reward': 0.75 });
		await store.close();
		// a torn line in the middle (a crash long ago) and at the end (step 2's line cut in half)
		const file = join(dir, 'history.jsonl');
		const lines = (await readFile(file, 'utf8')).trim().split('\n');
		await writeFile(
			file,
			[lines[0], '{"step": 1, "val/rew', lines[1], '42', lines[2].slice(0, 12)].join('\n')
		);
		const warnings: string[] = [];
		const again = await NodeRunStore.open(dir, { onWarning: (m) => warnings.push(m) });
		const text = await readFile(file, 'utf8');
		const parsed = text
			.trim()
			.split('\n')
			.map((l) => JSON.parse(l));
		expect(parsed).toEqual([
			{ step: 1, 'train/reward': 0.5 },
			{ step: 1, 'val/reward': 0.25 },
			{ step: 2, 'train/reward': 0.75 }
		]);
		expect(warnings.join('\n')).toMatch(/rewrote history\.jsonl without its lines 2, 4, 5/);
		expect(warnings.join('\n')).toMatch(/lacked step 2's line .*restored from checkpoints\/0002/);
		expect(await readdir(dir)).not.toContain(expect.stringMatching(/\.tmp$/));
		await again.close();
	});
});

describe('the run lock', () => {
	const children: ChildProcess[] = [];
	afterAll(() => children.forEach((c) => c.kill('SIGKILL')));

	/** Runs `script` under sh; resolves with the first line it prints (a pid). */
	const shell = (script: string) =>
		new Promise<number>((resolve) => {
			const child = spawn('sh', ['-c', script], { stdio: ['ignore', 'pipe', 'ignore'] });
			children.push(child);
			child.stdout!.once('data', (d: Buffer) => resolve(Number(String(d).trim())));
		});
	const lockOf = async (dir: string, pid: number, since: Date) => {
		const { mkdir } = await import('node:fs/promises');
		await mkdir(dir, { recursive: true });
		await writeFile(
			join(dir, LOCK_FILE),
			JSON.stringify({ pid, hostname: hostname(), since: since.toISOString() })
		);
	};

	it("a killed writer's zombie (not yet reaped) holds no lock: taken over at once", async () => {
		// `sleep 0` exits at once; its parent then execs a sleep that never reaps it: a zombie
		const zombie = await shell('sleep 0 & echo $!; exec sleep 20');
		await new Promise((r) => setTimeout(r, 300));
		const state = (await readFile(`/proc/${zombie}/stat`, 'utf8')).split(') ')[1][0];
		expect(state).toBe('Z');
		const dir = join(root, `lock-${n++}`);
		await lockOf(dir, zombie, new Date());
		const lock = await RunLock.acquire(dir);
		expect(lock.tookOver).toMatch(new RegExp(`^process ${zombie} on `));
		await lock.release();
	});

	it('a pid reused by a process started after the lock was written: taken over', async () => {
		const live = await shell('echo $$; exec sleep 20');
		const dir = join(root, `lock-${n++}`);
		await lockOf(dir, live, new Date(Date.now() - 3_600_000)); // written an hour ago
		const lock = await RunLock.acquire(dir);
		expect(lock.tookOver).toMatch(new RegExp(`^process ${live} on `));
		await lock.release();
	});

	it('a live writer is named, with what to do, never "delete the lock file"', async () => {
		const live = await shell('echo $$; exec sleep 20');
		const dir = join(root, `lock-${n++}`);
		await lockOf(dir, live, new Date(Date.now() + 1000));
		const error = await RunLock.acquire(dir).catch((e: unknown) => e);
		expect(error).toBeInstanceOf(RunLockedError);
		const message = (error as Error).message;
		expect(message).toMatch(new RegExp(`written by process ${live} on `));
		expect(message).toMatch(new RegExp(`\`kill ${live}\` stops it after its step`));
		expect(message).not.toMatch(/delete the lock/);
	});
});
