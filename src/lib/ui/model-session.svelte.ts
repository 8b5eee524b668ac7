/**
 * @file The Model panel's state, as Svelte 5 runes: load a model by URL prefix in the
 * backend worker (progress, summary, typed errors), then score texts with it, or with a
 * saved run's model (its trained adapter). UI state
 * only: the work happens in the worker, and everything here arrives as plain data.
 */
import type { BackendHandle } from '../worker/client';
import type {
	BackendError,
	ModelLoadProgress,
	ModelSummary,
	RunTextScores,
	TextScores
} from '../worker/protocol';
import { onThisSite } from './site-url';

export type ModelPhase = 'empty' | 'loading' | 'loaded' | 'error';

/** 1 GiB: the unit of the memory-budget field. */
const GIB = 1024 ** 3;

export class ModelSession {
	/** The URL prefix typed in (the folder holding config.json). */
	url = $state('');
	/** Optional GPU memory budget in GiB, as typed ('' for none). */
	budgetGiB = $state('');
	phase = $state<ModelPhase>('empty');
	progress = $state<ModelLoadProgress | null>(null);
	summary = $state<ModelSummary | null>(null);
	loadError = $state<BackendError | null>(null);

	text = $state('');
	scoring = $state(false);
	/** The last scores: of the loaded model, or of a saved run's (then `run` and `step` say which). */
	scores = $state<TextScores | RunTextScores | null>(null);
	/** The saved run whose model scores the text (Score with this run). */
	runName = $state('');
	scoreError = $state<BackendError | null>(null);

	#backend: () => BackendHandle | null;
	#subscribed: BackendHandle | null = null;

	/** `backend` returns the page's worker (shared with the self-test), or null if it has none. */
	constructor(backend: () => BackendHandle | null, url = '') {
		this.#backend = backend;
		this.url = url;
	}

	get busy(): boolean {
		return this.phase === 'loading' || this.scoring;
	}

	async load(): Promise<void> {
		const backend = this.#connect();
		if (!backend) return;
		let memoryBudgetBytes: number | undefined;
		if (this.budgetGiB.trim() !== '') {
			const gib = Number(this.budgetGiB);
			if (!Number.isFinite(gib) || gib <= 0) {
				this.#loadFailed({
					kind: 'invalid-input',
					message: `The memory budget must be a positive number of GiB, not '${this.budgetGiB}'.`
				});
				return;
			}
			memoryBudgetBytes = Math.round(gib * GIB);
		}
		this.phase = 'loading';
		this.progress = null;
		this.summary = null;
		this.loadError = null;
		this.scores = null;
		this.scoreError = null;
		const result = await backend.loadModel(
			onThisSite(this.url),
			(progress) => {
				if (this.phase === 'loading') this.progress = progress;
			},
			{ memoryBudgetBytes }
		);
		if (!result.ok) return this.#loadFailed(result.error);
		this.summary = result.value;
		this.phase = 'loaded';
	}

	async score(): Promise<void> {
		const backend = this.#connect();
		if (!backend) return;
		this.scoring = true;
		this.scoreError = null;
		const result = await backend.scoreText(this.text);
		this.scoring = false;
		if (!result.ok) {
			this.scores = null;
			this.scoreError = result.error;
			if (result.error.kind === 'no-model' || result.error.kind === 'device-lost') this.#lost();
			return;
		}
		this.scores = result.value;
	}

	/** Scores the text with the saved run `runName`'s model (base, warm start, trained LoRA). */
	async scoreRun(): Promise<void> {
		const backend = this.#connect();
		if (!backend || !this.runName) return;
		this.scoring = true;
		this.scoreError = null;
		const result = await backend.scoreRunText(this.runName, this.text);
		this.scoring = false;
		this.scores = result.ok ? result.value : null;
		this.scoreError = result.ok ? null : result.error;
	}

	/** The backend, subscribed to once for device loss; null (with an error shown) if none. */
	#connect(): BackendHandle | null {
		const backend = this.#backend();
		if (!backend) {
			this.#loadFailed({
				kind: 'worker-failed',
				message: 'The backend worker is not running; reload the page.'
			});
			return null;
		}
		if (this.#subscribed !== backend) {
			this.#subscribed = backend;
			void backend.subscribe((event) => {
				if (event.type === 'device-lost' && this.phase === 'loaded') {
					this.#lost();
					this.loadError = {
						kind: 'device-lost',
						message: `${event.error.message} The model went with it: load it again (it comes from the cache).`
					};
				}
			});
		}
		return backend;
	}

	#lost(): void {
		this.summary = null;
		this.phase = 'error';
	}

	#loadFailed(error: BackendError): void {
		this.loadError = error;
		this.phase = 'error';
		this.progress = null;
	}
}
