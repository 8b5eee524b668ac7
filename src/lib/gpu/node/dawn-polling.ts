/**
 * @file How dawn.node waits for the GPU on a CPU-only driver. While a promise (mapAsync,
 * onSubmittedWorkDone) is pending, Dawn re-queues its event processing with the global
 * `setImmediate` every turn of the event loop: a busy loop on the main thread. On a real
 * GPU that is the lowest latency; on SwiftShader the GPU's work runs on the same few CPU
 * cores, so the spin takes a core from it (a rollout on 2 cores: ~2x slower). There Dawn's
 * re-queues go through a 1 ms timer instead. Dawn's callback is told apart by its shape: a
 * native function of no name and no parameters (a promise's resolver takes one).
 * `TABRL_DAWN_POLL=timer|immediate` overrides the choice.
 */

export type DawnPolling = 'timer' | 'immediate';

/** The polling for this process: `override` if given, else a timer on a software driver. */
export function dawnPollingFor(softwareDriver: boolean, override?: string): DawnPolling {
	if (override === 'timer' || override === 'immediate') return override;
	if (override) throw new Error(`TABRL_DAWN_POLL is 'timer' or 'immediate', not '${override}'`);
	return softwareDriver ? 'timer' : 'immediate';
}

/** Whether `fn` is the callback dawn.node queues (a nameless native function of no parameters). */
export function isDawnCallback(fn: unknown): boolean {
	return (
		typeof fn === 'function' &&
		fn.length === 0 &&
		fn.name === '' &&
		Function.prototype.toString.call(fn).endsWith('{ [native code] }')
	);
}

let installed = false;

/** Sends Dawn's re-queued event processing through a timer (once per process). */
export function pollDawnByTimer(): void {
	if (installed) return;
	installed = true;
	const immediate = globalThis.setImmediate;
	const polite = ((fn: (...args: unknown[]) => void, ...args: unknown[]) =>
		isDawnCallback(fn)
			? setTimeout(fn, 0, ...args)
			: immediate(fn, ...args)) as typeof setImmediate;
	globalThis.setImmediate = Object.assign(polite, immediate);
}
