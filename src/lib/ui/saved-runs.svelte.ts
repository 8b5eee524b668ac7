/**
 * @file The runs saved in this browser (IndexedDB, through the worker), as Svelte 5 runes:
 * the listing, a run's import and export as one zip (grpo/store/run-archive.ts), its
 * deletion, and runs chosen to be compared (compare-runs.ts). A refusal goes to `onError`,
 * which the panel shows; what a deletion or an import does to the run shown is
 * train-session.svelte.ts's.
 */
import type { BackendHandle } from '../worker/client';
import type { BackendError, SavedRun } from '../worker/protocol';
import type { ComparedRun } from './compare-runs';

export class SavedRuns {
	/** Saved runs; null until the worker has listed them. */
	list = $state<SavedRun[] | null>(null);
	/** What the last import saved, in words (null before one). */
	importNotice = $state<string | null>(null);
	/** The names ticked to be compared, in the order ticked. */
	chosen = $state<string[]>([]);
	/** The runs compared (their recipes and histories), or null while none are. */
	compared = $state<ComparedRun[] | null>(null);

	#backend: () => BackendHandle | null;
	#onError: (error: BackendError | null) => void;
	/** The run of the link the page opened with, when it carried a curve (compared like a saved one). */
	readonly shared: () => ComparedRun | null;

	/**
	 * `backend` returns the page's worker, or null; `onError` shows (or, null, clears) an error;
	 * `shared` the shared link's run, or null.
	 */
	constructor(
		backend: () => BackendHandle | null,
		onError: (error: BackendError | null) => void,
		shared: () => ComparedRun | null = () => null
	) {
		this.#backend = backend;
		this.#onError = onError;
		this.shared = shared;
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
		this.chosen = this.chosen.filter((n) => n !== name);
		if (this.compared?.some((r) => r.name === name)) {
			const left = this.compared.filter((r) => r.name !== name);
			this.compared = left.length >= 2 ? left : null;
		}
		return true;
	}

	/** Ticks or unticks a run for comparing. */
	choose(name: string, on: boolean): void {
		const others = this.chosen.filter((n) => n !== name);
		this.chosen = on ? [...others, name] : others;
	}

	/** Compares the ticked runs (two or more): their saved recipes and histories (the shared one's from its link). */
	async compare(): Promise<void> {
		const backend = this.#backend();
		if (!backend || this.chosen.length < 2) return;
		const runs: ComparedRun[] = [];
		const shared = this.shared();
		for (const name of this.chosen) {
			if (shared && name === shared.name) {
				runs.push(shared);
				continue;
			}
			const history = await backend.runHistory(name);
			if (!history.ok) {
				this.#onError(history.error);
				return;
			}
			runs.push({ name, recipe: this.find(name)?.recipe, history: history.value });
		}
		this.compared = runs;
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
