/**
 * @file Node only: a stop for processes started through npm, which does not pass SIGTERM on
 * (npm 10 exits, its child runs on). The trainer watches its chain of launching processes up
 * to the nearest npm or npx (Linux /proc) and takes any of them ending as SIGTERM; started
 * otherwise, signals reach it directly.
 */
import { basename } from 'node:path';
import { isRunning, procInfo } from '../../src/lib/util/node/process';

/** npm names itself in its process title ("npm run cli", "npm exec tsx ..."), or runs as
 * `node .../npm-cli.js` before it has. */
const isNpm = (argv: string[]) =>
	['npm', 'npx'].includes(basename((argv[0] ?? '').split(' ')[0])) ||
	/(?:^|\/)(?:npm|npx)-cli\.js$/.test(argv[1] ?? '');

/** The pids from this process's parent up to the nearest npm/npx; [] where there is none. */
export function launcherChain(): number[] {
	const chain: number[] = [];
	for (let pid = process.ppid; pid > 1 && chain.length < 16;) {
		const info = procInfo(pid);
		if (!info) return [];
		chain.push(pid);
		if (isNpm(info.argv)) return chain;
		pid = info.ppid;
	}
	return [];
}

/**
 * Calls `onGone` once (with the pid) when a process of the launcher chain ends; checks every
 * `everyMs`. dispose() stops watching.
 */
export function watchLauncher(onGone: (pid: number) => void, everyMs = 500): { dispose(): void } {
	const chain = launcherChain();
	if (!chain.length) return { dispose() {} };
	const timer = setInterval(() => {
		const gone = chain.find((pid) => !isRunning(pid));
		if (gone === undefined) return;
		clearInterval(timer);
		onGone(gone);
	}, everyMs);
	timer.unref();
	return { dispose: () => clearInterval(timer) };
}
