/**
 * @file A test hook for crash tests: `TABRL_PAUSE_AT=point:step` (e.g.
 * `checkpoint-renamed:3`) makes the process stop at that named point of a run's save or
 * step, write `tabrl: paused at point:step (pid N)` to stderr, and wait there for ever, so a
 * test can kill process N (SIGKILL) at exactly that point and check what the next open makes of it
 * (tests/unit/cli/train-crash.test.ts). Unset, as always outside those tests, it costs one
 * lookup. Safe in the browser (no `process`: never set).
 *
 * Points: `checkpoint-files` (the temp folder written, not yet renamed),
 * `checkpoint-renamed` (the checkpoint in place, its history line not yet appended),
 * `history-append` (half of a history line written: a torn line), `sft-step` / `grpo-step`
 * (before that optimizer step trains; `step` is the step it makes).
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
