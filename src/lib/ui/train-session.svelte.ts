/**
 * @file The Train panel's state, as Svelte 5 runes. UI state only: a run is a recipe (a
 * preset, plus what the visitor changed) started in the tab's one worker, where the run
 * loop (src/lib/run) plays the rollouts, trains and saves each step in IndexedDB; this
 * file sends start / stop / delete / export and folds the run's events into what the
 * panel shows. Rows are appended from each step's event (the history is read once, when
 * a saved run is opened), and saved runs are listed on load.
 */
import {
	DEFAULT_PRESET,
	forSoftwareGpu,
	preset,
	RUN_ENVIRONMENTS,
	type EnvironmentName,
	type EvaluationReport,
	type PresetName,
	type Recipe,
	type RunEvent,
	type RunPhase,
	type RunSummary
} from '../run';
import type { HistoryEntry } from '../agent/backend/types';
import { trajectoryFromJson } from '../agent/jsonl';
import type { ReplayItem } from '../agent/replay';
import { policyClient } from '../agent/policy-client';
import type { BackendHandle } from '../worker/client';
import type { BackendError, SavedRun } from '../worker/protocol';

export type TrainPhase = 'idle' | 'running' | 'stopping';

export interface StepRow {
	/** The model's step after it (a skipped step repeats the step it could not advance). */
	step: number;
	/** Position in the table: unique even where skipped steps repeat a step. */
	key: number;
	split: 'train' | 'sft';
	reward: number | null;
	loss: number | null;
	skipped: boolean;
}

/** A finished rollout, as the panel shows it: its environment's replay of it. */
export interface GameView {
	step: number;
	group: number;
	index: number;
	reward: number;
	outcome: string;
	/** What the environment draws of the game (boards, or a transcript of tool calls). */
	items: ReplayItem[];
}

/** Games kept for display (the newest). */
const GAMES_SHOWN = 8;

function rowsOf(history: HistoryEntry[]): StepRow[] {
	return history
		.filter((h) => typeof h['train/reward'] === 'number' || typeof h['sft/loss'] === 'number')
		.map((h, key) => {
			const sft = typeof h['sft/loss'] === 'number';
			return {
				step: h.step,
				key,
				split: sft ? 'sft' : 'train',
				reward: sft ? null : (h['train/reward'] as number),
				loss: sft
					? (h['sft/loss'] as number)
					: typeof h['train/loss'] === 'number'
						? (h['train/loss'] as number)
						: null,
				skipped: h['train/skipped'] === 1
			};
		});
}

function gameOf(event: Extract<RunEvent, { type: 'rollout' }>, env: EnvironmentName): GameView {
	let items: ReplayItem[];
	try {
		items = RUN_ENVIRONMENTS[env].replay(trajectoryFromJson(event.trajectory));
	} catch (error) {
		// a trajectory the replay cannot read is shown as such, not dropped
		items = [
			{ kind: 'outcome', text: `not shown: ${(error as Error).message}`, reward: event.reward }
		];
	}
	return {
		step: event.step,
		group: event.group,
		index: event.index,
		reward: event.reward,
		outcome: String(event.trajectory.metadata?.outcome ?? ''),
		items
	};
}

export class TrainSession {
	preset = $state<PresetName>(DEFAULT_PRESET);
	/** The base model's URL prefix; a path is taken relative to this site. */
	url = $state('');
	run = $state('');
	steps = $state(0);
	groups = $state(0);
	groupSize = $state(0);
	learningRate = $state('');

	phase = $state<TrainPhase>('idle');
	runPhase = $state<RunPhase | null>(null);
	/** The run shown: its model step and rows. */
	step = $state(0);
	rows = $state<StepRow[]>([]);
	games = $state<GameView[]>([]);
	evaluations = $state<EvaluationReport[]>([]);
	rolloutsDone = $state(0);
	rolloutsTotal = $state(0);
	summary = $state<RunSummary | null>(null);
	error = $state<BackendError | null>(null);
	/** Saved runs; null until the worker has listed them. */
	saved = $state<SavedRun[] | null>(null);
	/** Set when the GPU is a software one: presets run scaled down (forSoftwareGpu). */
	softwareGpu = $state(false);

	#backend: () => BackendHandle | null;
	#rowKey = 0;
	/** Games per round of the run going (known before the first one finishes). */
	#groupGames = 0;
	/** A game of the preset's expert (the player its warm start imitates), played in the page. */
	example = $state<{ env: EnvironmentName; items: ReplayItem[]; reward: number } | null>(null);
	/** The environment of the run in progress (its replay draws the games). */
	#environment: EnvironmentName = DEFAULT_PRESET;
	/** Example games play scenarios from here on (below the evaluation seeds). */
	#exampleSeed = Math.floor(Math.random() * 1e6);

	/** `backend` returns the page's worker, or null if it has none. */
	constructor(backend: () => BackendHandle | null, url = '') {
		this.#backend = backend;
		this.choosePreset(DEFAULT_PRESET);
		if (url) this.url = url;
	}

	get busy(): boolean {
		return this.phase !== 'idle';
	}

	/** Fills the form with a preset's values (a fresh run name for it). */
	choosePreset(name: PresetName): void {
		this.preset = name;
		// (also called when the GPU probe answers: an example of this preset stays)
		if (this.example?.env !== name) this.example = null;
		const r = this.#scaled(preset(name));
		this.url = r.baseModel;
		this.run = `${name}-1`;
		this.steps = r.grpo.steps;
		this.groups = r.grpo.groups;
		this.groupSize = r.grpo.groupSize;
		this.learningRate = String(r.grpo.learningRate);
	}

	/**
	 * Plays one game of the preset's environment with its scripted expert, through the same
	 * rollout code a model goes through (no model, no GPU: milliseconds), and shows it: what
	 * the task looks like and what the warm start imitates. A new scenario each time.
	 */
	async showExample(): Promise<void> {
		const env = RUN_ENVIRONMENTS[this.preset];
		const request = {
			model: 'expert',
			scenario: this.#exampleSeed++,
			index: 0,
			temperature: 0,
			maxTokens: 128,
			samplingSeed: null,
			// the game as the preset plays it on a GPU (free here: no model plays it)
			options: preset(this.preset).envOptions ?? {}
		};
		const game = await env.rollout(policyClient(env.scripted('expert', request)), request);
		this.example = { env: env.name, items: env.replay(game), reward: game.reward };
	}

	/** Tells the session what GPU the worker got (a software one scales presets down). */
	setSoftwareGpu(software: boolean): void {
		if (software === this.softwareGpu) return;
		this.softwareGpu = software;
		if (!this.busy) this.choosePreset(this.preset);
	}

	/** The recipe the form describes. */
	recipe(): Recipe {
		const base = this.#scaled(preset(this.preset));
		return {
			...base,
			baseModel: this.url.trim(),
			grpo: {
				...base.grpo,
				steps: Number(this.steps),
				groups: Number(this.groups),
				groupSize: Number(this.groupSize),
				learningRate: Number(this.learningRate)
			}
		};
	}

	/** Lists the saved runs (IndexedDB, through the worker). */
	async refresh(): Promise<void> {
		const backend = this.#backend();
		if (!backend) return;
		const result = await backend.listRuns();
		if (result.ok) this.saved = result.value;
		else this.error = result.error;
	}

	/** Starts the form's run (resuming it if saved under that name). */
	start(): Promise<void> {
		return this.#start(this.run.trim(), this.recipe());
	}

	/** Resumes a saved run with the recipe it was started with. */
	resume(run: SavedRun): Promise<void> {
		// (a plain copy: the listing is reactive state, and a proxy cannot cross to the worker)
		const recipe = ($state.snapshot(run.recipe) as Recipe | undefined) ?? this.recipe();
		return this.#start(run.name, recipe);
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
		this.#show(name, history.value);
	}

	async remove(name: string): Promise<void> {
		const backend = this.#backend();
		if (!backend) return;
		const result = await backend.deleteRun(name);
		if (!result.ok) this.error = result.error;
		if (this.run === name && !this.busy) {
			this.rows = [];
			this.step = 0;
			this.summary = null;
		}
		await this.refresh();
	}

	/** A saved run's latest adapter, PEFT's two files. */
	async exportAdapter(name = this.run.trim()): Promise<Record<string, Uint8Array> | null> {
		const backend = this.#backend();
		if (!backend) return null;
		const result = await backend.exportRun(name);
		if (!result.ok) {
			this.error = result.error;
			return null;
		}
		return result.value;
	}

	#scaled(recipe: Recipe): Recipe {
		return this.softwareGpu ? forSoftwareGpu(recipe) : recipe;
	}

	#show(name: string, history: HistoryEntry[]): void {
		this.run = name;
		this.rows = rowsOf(history);
		this.#rowKey = this.rows.length;
		this.step = history.reduce((s, h) => Math.max(s, h.step), 0);
		this.evaluations = [];
		this.games = [];
		this.summary = null;
		this.error = null;
	}

	async #start(name: string, recipe: Recipe): Promise<void> {
		const backend = this.#backend();
		if (!backend || this.busy) return;
		this.error = null;
		this.summary = null;
		this.phase = 'running';
		this.runPhase = 'loading';
		try {
			const history = await backend.runHistory(name);
			this.#show(name, history.ok ? history.value : []);
			this.#groupGames = recipe.grpo.groups * recipe.grpo.groupSize;
			this.#environment = recipe.environment;
			const result = await backend.startRun(name, recipe, (event) => this.#onEvent(event));
			if (result.ok) this.summary = result.value;
			else this.error = result.error;
		} catch (error) {
			// (the call could not even be made, e.g. a value the worker cannot receive)
			this.error = { kind: 'internal', message: (error as Error)?.message ?? String(error) };
		} finally {
			this.phase = 'idle';
			this.runPhase = null;
			await this.refresh();
		}
	}

	#onEvent(event: RunEvent): void {
		switch (event.type) {
			case 'phase':
				this.runPhase = event.phase;
				if (event.phase === 'rollouts') {
					this.rolloutsDone = 0;
					this.rolloutsTotal = this.#groupGames;
				}
				break;
			case 'rollout':
				this.rolloutsDone = event.done;
				this.rolloutsTotal = event.total;
				this.games = [gameOf(event, this.#environment), ...this.games].slice(0, GAMES_SHOWN);
				break;
			case 'step':
				this.step = event.step;
				this.rows.push({
					step: event.step,
					key: this.#rowKey++,
					split: event.split,
					reward: event.split === 'train' ? (event.metrics['train/reward'] ?? null) : null,
					loss: event.metrics[`${event.split}/loss`] ?? null,
					skipped: !!event.skipped
				});
				break;
			case 'eval':
				this.evaluations.push(event.report);
				break;
			case 'end':
				this.summary = event.summary;
				break;
		}
	}
}
