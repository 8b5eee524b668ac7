/**
 * @file The runs saved in this browser (IndexedDB, through the worker), as Svelte 5 runes:
 * the listing, and a run's import and export as one zip (grpo/store/run-archive.ts) and its
 * deletion. A refusal goes to `onError`, which the panel shows; what a deletion or an import
 * does to the run shown is train-session.svelte.ts's.
 */
import type { BackendHandle } from '../worker/client';
import type { BackendError, SavedRun } from '../worker/protocol';

export class SavedRuns {
	/** Saved runs; null until the worker has listed them. */
	list = $state<SavedRun[] | null>(null);
	/** What the last import saved, in words (null before one). */
	importNotice = $state<string | null>(null);

	#backend: () => BackendHandle | null;
	#onError: (error: BackendError | null) => void;

	/** `backend` returns the page's worker, or null; `onError` shows (or, null, clears) an error. */
	constructor(backend: () => BackendHandle | null, onError: (error: BackendError | null) => void) {
		this.#backend = backend;
		this.#onError = onError;
	}

	/** The saved run of that name, as listed (undefined when it is not). */
	find(name: string): SavedRun | undefined {
		return this.list?.find((r) => r.name === name);
	}

	/** Lists the saved runs. */
	async refresh(): Promise<void> {
		const backend = this.#backend();
		if (!backend) return;
		const result = await backend.listRuns();
		if (result.ok) this.list = result.value;
		else this.#onError(result.error);
	}

	/** Deletes a saved run (not listed again: the caller refreshes); false without a worker. */
	async delete(name: string): Promise<boolean> {
		const backend = this.#backend();
		if (!backend) return false;
		const result = await backend.deleteRun(name);
		if (!result.ok) this.#onError(result.error);
		return true;
	}

	/** A saved run as one zip file; null when refused (the error shown). */
	async exportRun(name: string): Promise<Uint8Array | null> {
		const backend = this.#backend();
		if (!backend) return null;
		const result = await backend.exportRun(name);
		if (!result.ok) {
			this.#onError(result.error);
			return null;
		}
		return result.value;
	}

	/**
	 * Saves the run of an exported zip (never over a saved one: a taken name becomes NAME-2,
	 * ...) and says so; returns its name, or null when there is no worker or the file is not a
	 * run's zip (the error shown). Not listed again: the caller refreshes.
	 */
	async importRun(file: File): Promise<string | null> {
		const backend = this.#backend();
		if (!backend) return null;
		this.#onError(null);
		this.importNotice = null;
		const result = await backend.importRun(new Uint8Array(await file.arrayBuffer()));
		if (!result.ok) {
			this.#onError(result.error);
			return null;
		}
		const run = result.value;
		this.importNotice = `Imported ${file.name} as '${run.name}' (step ${run.step}): press Resume to train it on.`;
		return run.name;
	}
}
