/**
 * @file Node only: DIR/run.lock ({pid, hostname, since}) makes one process the run's
 * writer. Taken with an exclusive create; a stale lock (pid gone, a zombie, started after
 * the lock, or our own pid not held here) is taken over and read back, a lost race being a
 * RunLockedError. Another host's lock cannot be checked and is honoured.
 */
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { RunLockedError } from '../../errors';
import { isRunning } from '../../../util/node/process';

export const LOCK_FILE = 'run.lock';

interface LockOwner {
	pid: number;
	hostname: string;
	since: string;
}

/** Folders whose lock this process holds (resolved paths). */
const held = new Set<string>();

function parseOwner(text: string): LockOwner | undefined {
	try {
		const o = JSON.parse(text) as Partial<LockOwner>;
		if (Number.isSafeInteger(o.pid) && typeof o.hostname === 'string')
			return { pid: o.pid!, hostname: o.hostname, since: String(o.since ?? '?') };
	} catch {
		// a lock torn by a crash while it was written: stale
	}
	return undefined;
}

const describe = (o: LockOwner) => `process ${o.pid} on ${o.hostname} since ${o.since}`;

/** What to do about a live lock: only another host's can be neither checked nor stopped here. */
const remedy = (o: LockOwner) =>
	o.hostname === hostname()
		? `It is running: wait for it to finish, stop it (\`kill ${o.pid}\` stops it after its step, ` +
			'its steps saved), or train into another folder.'
		: `This machine cannot tell whether it still runs on ${o.hostname}: stop it there, or ` +
			'delete the lock file once no process on that host trains this run.';

function isStale(owner: LockOwner | undefined): boolean {
	if (!owner) return true;
	if (owner.hostname !== hostname()) return false;
	if (owner.pid === process.pid) return true; // (held ones are refused before this)
	const written = Date.parse(owner.since);
	return !isRunning(owner.pid, Number.isFinite(written) ? written : undefined);
}

export class RunLock {
	#released = false;
	private constructor(
		readonly dir: string,
		/** The stale owner taken over, in words, when there was one (for a warning). */
		readonly tookOver?: string
	) {}

	/** Takes `dir`'s lock (the folder must exist); throws RunLockedError when it is held. */
	static async acquire(dir: string): Promise<RunLock> {
		const key = resolve(dir);
		const file = join(dir, LOCK_FILE);
		const me: LockOwner = {
			pid: process.pid,
			hostname: hostname(),
			since: new Date().toISOString()
		};
		const text = JSON.stringify(me) + '\n';
		if (held.has(key)) {
			const current = parseOwner(await readFile(file, 'utf8').catch(() => ''));
			throw new RunLockedError(file, `another store in this process (${describe(current ?? me)})`);
		}
		try {
			await writeFile(file, text, { flag: 'wx' });
			held.add(key);
			return new RunLock(key);
		} catch (error) {
			if ((error as { code?: string }).code !== 'EEXIST') throw error;
		}
		const current = parseOwner(await readFile(file, 'utf8').catch(() => ''));
		if (!isStale(current)) throw new RunLockedError(file, describe(current!), remedy(current!));
		// Replace the stale lock in one rename, then check that no one else did the same.
		const temp = `${file}.${process.pid}.tmp`;
		await writeFile(temp, text);
		await rename(temp, file);
		const after = parseOwner(await readFile(file, 'utf8').catch(() => ''));
		if (after?.pid !== me.pid || after.since !== me.since)
			throw new RunLockedError(file, after ? describe(after) : 'another process taking it over');
		held.add(key);
		return new RunLock(key, current ? describe(current) : 'an unreadable lock file');
	}

	/** Removes the lock file (once; only if it is still this process's). */
	async release(): Promise<void> {
		if (this.#released) return;
		this.#released = true;
		held.delete(this.dir);
		const file = join(this.dir, LOCK_FILE);
		const owner = parseOwner(await readFile(file, 'utf8').catch(() => ''));
		if (owner?.pid === process.pid && owner.hostname === hostname())
			await rm(file, { force: true });
	}
}
