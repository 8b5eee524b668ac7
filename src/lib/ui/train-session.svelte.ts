/**
 * @file The Train panel's state as Svelte 5 runes: drives a run in the tab's worker (start,
 * resume, step through, stop) and ties together the form (`form`), the run shown (`view`),
 * the share link (`link`), the saved runs (`runs`), the cached models (`cached`) and the one
 * error the panel shows.
 */
import { recordedSettings, type Recipe } from '../run';
import type { HistoryEntry } from '../agent/backend/types';
import type { BackendHandle } from '../worker/client';
import type { BackendError, SavedRun } from '../worker/protocol';
import { CachedModels } from './cached-models.svelte';
import { RecipeForm } from './recipe-form.svelte';
import { RunView } from './run-view.svelte';
import { SavedRuns } from './saved-runs.svelte';
import { recipeSettings } from './share-link';
import { TrainLink } from './train-link.svelte';

export type TrainPhase = 'idle' | 'running' | 'stopping';

export class TrainSession {
	phase = $state<TrainPhase>('idle');
	error = $state<BackendError | null>(null);
	readonly form = new RecipeForm(() => this.runs?.list?.map((r) => r.name) ?? []);
	readonly view = new RunView();
	readonly link = new TrainLink(this.form, () => this.view.history);
	readonly runs: SavedRuns;
	/** The models in the browser's model cache (listed under the model choice). */
	readonly cached = new CachedModels();

	#backend: () => BackendHandle | null;

	/** `backend` returns the page's worker, or null if it has none. */
	constructor(backend: () => BackendHandle | null) {
		this.#backend = backend;
		this.runs = new SavedRuns(
			backend,
			(error) => (this.error = error),
			() => this.link.sharedRun()
		);
	}

	get busy(): boolean {
		return this.phase !== 'idle';
	}

	/** Tells the session what GPU the worker got (a software one scales presets down). */
	setSoftwareGpu(software: boolean): void {
		this.form.setSoftwareGpu(software, this.busy);
	}

	/**
	 * Starts the form's run (resuming it if saved under that name), unless a reward field is
	 * wrong: then its error shows next to it and nothing starts.
	 */
	async start(): Promise<void> {
		if (this.form.reward.check()) return;
		return this.#start(this.form.run.trim(), this.form.recipe());
	}

	/**
	 * Resumes a saved run with the recipe it was started with, and the learning rate, KL β
	 * and temperature its last step trained with (changed while paused: recordedSettings).
	 */
	resume(run: SavedRun): Promise<void> {
		// (a plain copy: the listing is reactive state, and a proxy cannot cross to the worker)
		const recipe = ($state.snapshot(run.recipe) as Recipe | undefined) ?? this.form.recipe();
		return this.#start(run.name, recipe, true);
	}

	/** A paused step-through run goes on to its next pause (or, `keepStepping` false, to its end). */
	async continueRun(keepStepping = true): Promise<void> {
		const backend = this.#backend();
		const paused = this.view.paused;
		if (!backend || !paused) return;
		this.view.paused = null;
		// the learning rate, KL β and temperature as the form holds them now: the run takes
		// them from here on (a value out of range is refused and the run stays paused)
		const f = this.form;
		const result = await backend.continueRun(keepStepping, {
			learningRate: Number(f.learningRate),
			klBeta: Number(f.klBeta),
			temperature: Number(f.temperature)
		});
		if (!result.ok) {
			this.error = result.error;
			this.view.paused = paused;
			return;
		}
		this.error = null;
		if (!keepStepping) this.form.stepThrough = false;
	}

	async stop(): Promise<void> {
		const backend = this.#backend();
		if (!backend || this.phase !== 'running') return;
		this.phase = 'stopping';
		await backend.stopRun();
	}

	/** Shows a saved run's history (without loading it onto the GPU). */
	async open(name: string): Promise<void> {
		const backend = this.#backend();
		if (!backend || this.busy) return;
		const history = await backend.runHistory(name);
		if (!history.ok) {
			this.error = history.error;
			return;
		}
		// the form (and so the address bar's link) takes the run's settings
		const recipe = this.runs.find(name)?.recipe as Recipe | undefined;
		if (recipe) this.form.fill(recipeSettings($state.snapshot(recipe) as Recipe));
		this.#show(name, history.value);
		this.link.showing(recipe ? recipeSettings($state.snapshot(recipe) as Recipe) : null);
	}

	/** Deletes a saved run; the run shown goes from the panel if it was that one (and idle). */
	async remove(name: string): Promise<void> {
		if (!(await this.runs.delete(name))) return;
		if (this.view.run === name && !this.busy) this.view.clear();
		await this.runs.refresh();
	}

	/** Saves the run of an exported zip, lists it and shows its history (runs.importRun). */
	async importRun(file: File): Promise<void> {
		const name = await this.runs.importRun(file);
		if (name === null) return;
		await this.runs.refresh();
		await this.open(name);
	}

	#show(name: string, history: HistoryEntry[]): void {
		this.form.run = name;
		this.view.show(name, history);
		this.error = null;
	}

	async #start(name: string, input: Recipe, recorded = false): Promise<void> {
		const backend = this.#backend();
		if (!backend || this.busy) return;
		this.error = null;
		this.view.summary = null;
		this.phase = 'running';
		this.view.runPhase = 'loading';
		try {
			const history = await backend.runHistory(name);
			const lines = history.ok ? history.value : [];
			const recipe = recorded
				? { ...input, grpo: { ...input.grpo, ...recordedSettings(lines) } }
				: input;
			// a resumed run's settings fill the form, as an opened one's do: the form says what
			// runs (before its name is set: a preset chosen picks a free name of its own)
			if (recorded) this.form.fill(recipeSettings(recipe));
			this.#show(name, lines);
			this.link.showing(recipeSettings(recipe));
			this.view.begin(recipe);
			// the key goes beside the recipe (never in it), and only to a run RULER judges
			const judgeApiKey = this.form.reward.keyFor(recipe);
			const result = await backend.startRun(name, recipe, (event) => this.view.apply(event), {
				...(judgeApiKey ? { judgeApiKey } : {}),
				stepThrough: this.form.stepThrough
			});
			if (result.ok) this.view.summary = result.value;
			else this.error = result.error;
		} catch (error) {
			// (the call could not even be made, e.g. a value the worker cannot receive)
			this.error = { kind: 'internal', message: (error as Error)?.message ?? String(error) };
		} finally {
			this.phase = 'idle';
			this.view.end();
			await this.runs.refresh();
		}
	}
}
