/**
 * @file Node only: whether a process still runs, as Linux's /proc tells it. `kill(pid, 0)`
 * alone says yes for a zombie (a process that ended and that its parent has not reaped yet)
 * and for a pid the system gave to a new process; /proc's state letter and start time tell
 * those apart. Where there is no /proc, the signal's answer is all there is.
 */
import { readFileSync } from 'node:fs';

/**
 * A process's state letter and start time (ms since the epoch) from /proc/PID/stat (fields
 * 3 and 22: clock ticks after boot, 100 a second on Linux) and /proc/stat's btime; undefined
 * where there is no such process or no /proc.
 */
export function procStat(pid: number): { state: string; startedMs: number } | undefined {
	try {
		const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
		// the command name (field 2) is in parentheses and may hold spaces: split after it
		const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
		const boot = Number(/^btime (\d+)$/m.exec(readFileSync('/proc/stat', 'utf8'))?.[1]);
		return { state: fields[0], startedMs: boot * 1000 + Number(fields[19]) * 10 };
	} catch {
		return undefined;
	}
}

/** The parent pid and the command line of `pid` from /proc; undefined where there is none. */
export function procInfo(pid: number): { ppid: number; argv: string[] } | undefined {
	try {
		const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
		const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
		const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
		return { ppid, argv };
	} catch {
		return undefined;
	}
}

/**
 * Whether `pid` runs (a zombie does not); with `startedBefore` (ms), also that it started by
 * then, give or take 2 s: a later start is another process under a reused pid.
 */
export function isRunning(pid: number, startedBefore?: number): boolean {
	try {
		process.kill(pid, 0);
	} catch (error) {
		// EPERM: alive, another user's
		return (error as { code?: string }).code !== 'ESRCH';
	}
	const proc = procStat(pid);
	if (!proc) return true;
	if (proc.state === 'Z' || proc.state === 'X') return false;
	return !(startedBefore !== undefined && proc.startedMs > startedBefore + 2000);
}
