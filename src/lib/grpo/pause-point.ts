/**
 * @file A test hook for crash tests: `TABRL_PAUSE_AT=point:step` stops the process at that
 * point of a run's save or step, writes `tabrl: paused at point:step (pid N)` to stderr and
 * waits, so a test can SIGKILL it exactly there (train-crash.test.ts). Unset it costs a
 * lookup; no `process` in the browser. Points: see PausePoint.
 */
export type PausePoint =
	'checkpoint-files' | 'checkpoint-renamed' | 'history-append' | 'sft-step' | 'grpo-step';

const ENV = 'TABRL_PAUSE_AT';

/** Whether the hook asks to stop at `point` for `step`. */
export function pauseRequested(point: PausePoint, step: number): boolean {
	const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process
		?.env;
	return env?.[ENV] === `${point}:${step}`;
}

/** Stops here for ever when the hook asks to (see the file's comment). */
export async function pausePoint(point: PausePoint, step: number): Promise<void> {
	if (!pauseRequested(point, step)) return;
	await pauseForever(point, step);
}

export function pauseForever(point: PausePoint, step: number): Promise<never> {
	process.stderr.write(`tabrl: paused at ${point}:${step} (pid ${process.pid})\n`);
	// A timer keeps the event loop (and so the process) alive until it is killed.
	setInterval(() => {}, 1 << 30);
	return new Promise<never>(() => {});
}
