/**
 * @file The Train panel's state, as Svelte 5 runes. UI state only: a run is a recipe (a
 * preset, plus what the visitor changed) started in the tab's one worker, where the run
 * loop (src/lib/run) plays the rollouts, trains and saves each step in IndexedDB; this
 * file sends start / stop / delete / export and folds the run's events into what the
 * panel shows. Rows are appended from each step's event (the history is read once, when
 * a saved run is opened), and saved runs are listed on load.
 *
 * The reward: the game's own by default (the recipe has no `reward`, as before), or RULER
 * (a judge LLM at a URL the visitor gives, reward-form.ts). The judge's API key is held here,
 * in memory (and in this tab's sessionStorage only if the visitor asks), never in a recipe:
 * it goes to the worker beside the recipe, which sends it only to the judge.
 */
import {
	DEFAULT_PRESET,
	forSoftwareGpu,
	preset,
	sizedGrpo,
	RUN_ENVIRONMENTS,
	type EnvironmentName,
	type EvaluationReport,
	type GroupGame,
	type PresetName,
	type Recipe,
	type RunEvent,
	type RewardSource,
	type PausePhase,
	type RunPhase,
	type RunSummary
} from '../run';
import type { HistoryEntry } from '../agent/backend/types';
import { trajectoryFromJson } from '../agent/jsonl';
import type { ReplayItem } from '../agent/replay';
import { policyClient } from '../agent/policy-client';
import type { BackendHandle } from '../worker/client';
import type { BackendError, SavedRun } from '../worker/protocol';
import { judgeStep, rewardErrors, rewardOf, type RewardField } from './reward-form';
import {
	changesPreset,
	recipeSettings,
	type ReadLink,
	type SharedResult,
	type ShareSettings
} from './share-link';
import { chartData } from './chart-series';
import type { LoadProgress } from '../util/throttle-progress';
import { replyTokens, type ReplyToken } from './reply-tokens';
import { phaseGuide, type PhaseGuide } from './phase-guide';
import { shiftView, type ShiftView } from './policy-shift';

/** Where "remember in this tab" keeps the judge's key: sessionStorage (this tab only). */
export const JUDGE_KEY_STORAGE = 'tabrl:judge-api-key';

function tabStorage(): Storage | null {
	try {
		return globalThis.sessionStorage ?? null;
	} catch {
		return null; // storage disabled
	}
}

export type TrainPhase = 'idle' | 'running' | 'stopping';

export interface StepRow {
	/** The model's step after it (a skipped step repeats the step it could not advance). */
	step: number;
	/** Position in the table: unique even where skipped steps repeat a step. */
	key: number;
	split: 'train' | 'sft';
	reward: number | null;
	loss: number | null;
	/** Why the step trained nothing ('no-signal', 'non-finite-grad', 'judge-failed'), or null. */
	skipped: string | null;
	/** RULER: the mean judge score and game reward, and the groups the judge failed on. */
	judge: number | null;
	game: number | null;
	dropped: number | null;
	/** RULER: why the judge failed on a group of the step's round, or null. */
	judgeFailure: string | null;
}

/** What the judge cost over the steps shown. */
export interface JudgeTotals {
	steps: number;
	dropped: number;
	tokens: number;
	cost: number;
	latencyMs: number;
}

const NO_JUDGE: JudgeTotals = { steps: 0, dropped: 0, tokens: 0, cost: 0, latencyMs: 0 };

/** A finished rollout, as the panel shows it: its environment's replay of it. */
export interface GameView {
	step: number;
	round: number;
	group: number;
	index: number;
	reward: number;
	outcome: string;
	/** What the environment draws of the game (boards, or a transcript of tool calls). */
	items: ReplayItem[];
	/** The model's replies, token by token with their sampling probabilities. */
	replies: ReplyToken[][];
	/** Once its group is scored ('group' event): what GRPO trains on, and the judge's view. */
	scored?: GroupGame;
}

/** Games kept for display (the newest). */
const GAMES_SHOWN = 8;

/** Whether two settings make the same run (a judge typed in but not used changes nothing). */
function sameRun(a: ShareSettings, b: ShareSettings): boolean {
	const used = (s: ShareSettings) =>
		s.reward === 'env' ? { ...s, judgeUrl: '', judgeModel: '', rubric: '' } : s;
	return JSON.stringify(used(a)) === JSON.stringify(used(b));
}

function rowsOf(history: HistoryEntry[]): StepRow[] {
	return history
		.filter((h) => typeof h['train/reward'] === 'number' || typeof h['sft/loss'] === 'number')
		.map((h, key): StepRow => {
			const sft = typeof h['sft/loss'] === 'number';
			const judged = sft ? null : judgeStep(h);
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
				skipped: h['train/skipped'] === 1 ? 'no-signal' : null,
				judge: judged?.score ?? null,
				game: judged?.game ?? null,
				dropped: judged ? judged.dropped : null,
				judgeFailure: null // (not in the stored history)
			};
		});
}

/** The spread (max - min) of a group's rewards. */
const spread = (games: readonly GroupGame[]) =>
	games.length
		? Math.max(...games.map((g) => g.reward)) - Math.min(...games.map((g) => g.reward))
		: 0;

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
		round: event.round,
		group: event.group,
		index: event.index,
		reward: event.reward,
		outcome: String(event.trajectory.metadata?.outcome ?? ''),
		items,
		replies: replyTokens(event.trajectory)
	};
}

/** A phase's progress as the status line shows it (TrainSession.progress). */
export interface PhaseProgress {
	what: 'games' | 'update';
	done: number;
	total: number;
	/** Seconds left at the pace so far; null before anything is done. */
	secondsLeft: number | null;
}

function phaseProgress(
	what: PhaseProgress['what'],
	done: number,
	total: number,
	start: number
): PhaseProgress {
	const elapsed = (performance.now() - start) / 1000;
	return {
		what,
		done,
		total,
		secondsLeft: done > 0 && total >= done ? (elapsed / done) * (total - done) : null
	};
}

export class TrainSession {
	preset = $state<PresetName>(DEFAULT_PRESET);
	/** The base model's URL prefix; a path is taken relative to this site. */
	url = $state('');
	run = $state('');
	steps = $state(0);
	/** Groups per step: 'auto' (sized to the device: run/sizing.ts) or a number. */
	groups = $state<number | string>(0);
	/** Auto sizing's last word: the games per step it chose and why (null: fixed sizes). */
	sizing = $state<string | null>(null);
	groupSize = $state(0);
	learningRate = $state('');
	seed = $state(1);
	/** Sentences on what of the share link the page opened with was not used; [] if all was. */
	linkNotice = $state<string[]>([]);

	/** The reward trained on: the game's (default) or RULER's judge. */
	reward = $state<RewardSource>('env');
	judgeUrl = $state('');
	judgeModel = $state('');
	/** The judge's API key: in memory; in sessionStorage too while `rememberKey`. */
	judgeKey = $state('');
	rememberKey = $state(false);
	/** Empty: ART's default rubric. */
	rubric = $state('');
	/** Fields whose errors show: left by the visitor, or all once Train was pressed. */
	touched = $state<Partial<Record<RewardField, boolean>>>({});
	/** Each reward field's error, as the run layer's validateRecipe words it. */
	readonly rewardErrors = $derived.by(() => rewardErrors(this.recipe()));
	/** The judge's metrics summed over the steps shown. */
	judgeTotals = $state<JudgeTotals>({ ...NO_JUDGE });
	/** RULER: the last reason the judge failed on a group in this run, or null. */
	judgeFailure = $state<string | null>(null);

	phase = $state<TrainPhase>('idle');
	runPhase = $state<RunPhase | null>(null);
	/** The run shown: its model step and rows. */
	step = $state(0);
	rows = $state<StepRow[]>([]);
	/** The run's history lines (stored, then each step's and evaluation's event): the charts. */
	history = $state<HistoryEntry[]>([]);
	/** The result a share link carried (the sharer's run, shown, not trained on). */
	sharedResult = $state<SharedResult | null>(null);
	/** The settings of the run shown (started, resumed or opened), for its result in a link. */
	#shownSettings = $state<ShareSettings | null>(null);
	readonly charts = $derived(chartData(this.history));
	games = $state<GameView[]>([]);
	evaluations = $state<EvaluationReport[]>([]);
	rolloutsDone = $state(0);
	rolloutsTotal = $state(0);
	/**
	 * The phase's progress: games played, or the update's micro-batches, with the seconds left
	 * at the pace so far (null until one is done); null outside those phases.
	 */
	progress = $state<PhaseProgress | null>(null);
	#phaseStart = 0;
	/** The model's step when the current phase began. */
	#phaseStep = $state(0);

	/**
	 * The step the status line names: while games are played and trained on, the step being
	 * made (the steps table's next row); otherwise the model's step.
	 */
	get shownStep(): number {
		const making = this.runPhase === 'rollouts' || this.runPhase === 'train';
		return making && this.step === this.#phaseStep ? this.step + 1 : this.step;
	}
	summary = $state<RunSummary | null>(null);
	/** The model's load while the run is 'loading': bytes so far, and the rate (bytes/s) of this file. */
	load = $state<(LoadProgress & { rate: number | null }) | null>(null);
	/** Where the current file's load began (for its rate). */
	#loadStart: { key: string; t: number; loaded: number } | null = null;
	/** Load reports seen in this run (a test reads it: a fast load shows for a moment only). */
	loadReports = $state(0);
	/** How the last update moved the best and the worst game's tokens (null before one). */
	shift = $state<ShiftView | null>(null);
	/** The current round's games' replies, by `round-group-index` (for the shift's token texts). */
	// (not state: nothing renders it, it only names the shift's tokens)
	// eslint-disable-next-line svelte/prefer-svelte-reactivity
	#roundReplies = new Map<string, ReplyToken[][]>();
	#round = -1;
	/** Step-through: the next run pauses between the phases of each GRPO step. */
	stepThrough = $state(false);
	/** Where a step-through run waits, and what the guide says there (null: not paused). */
	paused = $state<{ phase: PausePhase; guide: PhaseGuide } | null>(null);
	/** The run's recipe, the first scored group of the round and the last step's numbers, for the guide. */
	#recipe: Recipe | null = null;
	#guideGroup: { round: number; group: number; games: GroupGame[] } | null = null;
	#lastMetrics: Record<string, number> = {};
	error = $state<BackendError | null>(null);
	/** Saved runs; null until the worker has listed them. */
	saved = $state<SavedRun[] | null>(null);
	/** What the last import saved, in words (null before one). */
	importNotice = $state<string | null>(null);
	/** Set when the GPU is a software one: presets run scaled down (forSoftwareGpu). */
	softwareGpu = $state(false);

	#backend: () => BackendHandle | null;
	/**
	 * The form holds a share link's or a saved run's own sizes and rates (not just a preset):
	 * the GPU probe must not rescale them for a software GPU (a link means the same numbers
	 * everywhere).
	 */
	linked = $state(false);
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
	constructor(backend: () => BackendHandle | null) {
		this.#backend = backend;
		this.choosePreset(DEFAULT_PRESET);
		const kept = tabStorage()?.getItem(JUDGE_KEY_STORAGE);
		if (kept) {
			this.judgeKey = kept;
			this.rememberKey = true;
		}
	}

	/** "Remember in this tab": the key in sessionStorage (gone with the tab), or forgotten. */
	setRememberKey(on: boolean): void {
		this.rememberKey = on;
		this.keyChanged();
	}

	/** Keeps sessionStorage in step with the key field while remembering (never localStorage). */
	keyChanged(): void {
		const storage = tabStorage();
		try {
			if (this.rememberKey && this.judgeKey) storage?.setItem(JUDGE_KEY_STORAGE, this.judgeKey);
			else storage?.removeItem(JUDGE_KEY_STORAGE);
		} catch {
			// storage full or disabled: the key stays in memory
		}
	}

	/** A reward field's error once it shows (left, or Train pressed). */
	fieldError(field: RewardField): string | undefined {
		return this.touched[field] ? this.rewardErrors[field] : undefined;
	}

	/** The first reward field with an error, shown from now on; undefined when all are right. */
	checkReward(): RewardField | undefined {
		const fields: RewardField[] = ['source', 'baseURL', 'model', 'rubric'];
		this.touched = Object.fromEntries(fields.map((f) => [f, true]));
		return fields.find((f) => this.rewardErrors[f]);
	}

	get busy(): boolean {
		return this.phase !== 'idle';
	}

	/** Fills the form with a preset's values (a fresh run name for it). */
	choosePreset(name: PresetName): void {
		this.linked = false;
		this.preset = name;
		// (also called when the GPU probe answers: an example of this preset stays)
		if (this.example?.env !== name) this.example = null;
		const r = this.#scaled(preset(name));
		this.url = r.baseModel;
		this.run = `${name}-1`;
		this.steps = r.grpo.steps;
		this.groups = r.grpo.autoSize ? 'auto' : r.grpo.groups;
		this.groupSize = r.grpo.groupSize;
		this.learningRate = String(r.grpo.learningRate);
		this.seed = r.seed;
	}

	/** The form's settings, as a share link holds them (share-link.ts; never the API key). */
	shareSettings(): ShareSettings {
		return {
			preset: this.preset,
			model: this.url.trim(),
			steps: Number(this.steps),
			groups: this.#autoGroups ? 'auto' : Number(this.groups),
			groupSize: Number(this.groupSize),
			learningRate: Number(this.learningRate),
			seed: Number(this.seed),
			reward: this.reward,
			judgeUrl: this.judgeUrl.trim(),
			judgeModel: this.judgeModel.trim(),
			rubric: this.rubric.trim()
		};
	}

	/** Fills the form from a share link, exactly (not rescaled for a software GPU). */
	openLink(link: ReadLink): void {
		this.#fill(link.settings);
		this.linkNotice = link.ignored;
		this.sharedResult = link.result ?? null;
	}

	/**
	 * The shown run's result for a share link: its last trained step with its reward, and its
	 * last evaluation; undefined when nothing is trained yet or the form no longer holds that
	 * run's settings (a result must go with the settings that made it).
	 */
	runResult(): SharedResult | undefined {
		const shown = this.#shownSettings;
		if (!shown || !sameRun(shown, this.shareSettings())) return undefined;
		const last = (key: string) => this.history.findLast((h) => typeof h[key] === 'number');
		const trained = last('train/reward');
		if (!trained || trained.step < 1) return undefined;
		const evaluation = last('val/reward')?.['val/reward'] as number | undefined;
		return {
			step: trained.step,
			reward: trained['train/reward'] as number,
			...(evaluation === undefined ? {} : { evaluation })
		};
	}

	/** The form set to `s` (a preset alone, unchanged, is scaled as this GPU runs it). */
	#fill(s: ShareSettings): void {
		this.choosePreset(s.preset);
		this.linked = changesPreset(s);
		if (!this.linked) return;
		this.url = s.model;
		this.steps = s.steps;
		this.groups = s.groups;
		this.groupSize = s.groupSize;
		this.learningRate = String(s.learningRate);
		this.seed = s.seed;
		this.reward = s.reward;
		this.judgeUrl = s.judgeUrl;
		this.judgeModel = s.judgeModel;
		this.rubric = s.rubric;
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
		if (!this.busy && !this.linked) this.choosePreset(this.preset);
	}

	/** The recipe the form describes. */
	recipe(): Recipe {
		const base = this.#scaled(preset(this.preset));
		const reward = rewardOf({
			source: this.reward,
			baseURL: this.judgeUrl,
			model: this.judgeModel,
			rubric: this.rubric
		});
		return {
			...base,
			...(reward ? { reward } : {}),
			baseModel: this.url.trim(),
			seed: Number(this.seed),
			grpo: {
				...sizedGrpo(base.grpo, this.#autoGroups ? 'auto' : Number(this.groups)),
				steps: Number(this.steps),
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

	/**
	 * Starts the form's run (resuming it if saved under that name), unless a reward field is
	 * wrong: then its error shows next to it and nothing starts.
	 */
	async start(): Promise<void> {
		if (this.checkReward()) return;
		return this.#start(this.run.trim(), this.recipe());
	}

	/** Resumes a saved run with the recipe it was started with. */
	resume(run: SavedRun): Promise<void> {
		// (a plain copy: the listing is reactive state, and a proxy cannot cross to the worker)
		const recipe = ($state.snapshot(run.recipe) as Recipe | undefined) ?? this.recipe();
		return this.#start(run.name, recipe);
	}

	/** A paused step-through run goes on to its next pause (or, `keepStepping` false, to its end). */
	async continueRun(keepStepping = true): Promise<void> {
		const backend = this.#backend();
		if (!backend || !this.paused) return;
		this.paused = null;
		if (!keepStepping) this.stepThrough = false;
		await backend.continueRun(keepStepping);
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
		const recipe = this.saved?.find((r) => r.name === name)?.recipe as Recipe | undefined;
		if (recipe) this.#fill(recipeSettings($state.snapshot(recipe) as Recipe));
		this.#show(name, history.value);
		this.#shownSettings = recipe ? recipeSettings($state.snapshot(recipe) as Recipe) : null;
	}

	async remove(name: string): Promise<void> {
		const backend = this.#backend();
		if (!backend) return;
		const result = await backend.deleteRun(name);
		if (!result.ok) this.error = result.error;
		if (this.run === name && !this.busy) {
			this.rows = [];
			this.history = [];
			this.step = 0;
			this.summary = null;
		}
		await this.refresh();
	}

	/** A saved run as one zip file (grpo/run-archive.ts); null when refused (the error shown). */
	async exportRun(name: string): Promise<Uint8Array | null> {
		const backend = this.#backend();
		if (!backend) return null;
		const result = await backend.exportRun(name);
		if (!result.ok) {
			this.error = result.error;
			return null;
		}
		return result.value;
	}

	/**
	 * Saves the run of an exported zip (never over a saved one: a taken name becomes NAME-2,
	 * ...), lists it and shows its history; a file that is not a run's zip is an error shown.
	 */
	async importRun(file: File): Promise<void> {
		const backend = this.#backend();
		if (!backend) return;
		this.error = null;
		this.importNotice = null;
		const result = await backend.importRun(new Uint8Array(await file.arrayBuffer()));
		if (!result.ok) {
			this.error = result.error;
			return;
		}
		const run = result.value;
		this.importNotice = `Imported ${file.name} as '${run.name}' (step ${run.step}): press Resume to train it on.`;
		await this.refresh();
		await this.open(run.name);
	}

	get #autoGroups(): boolean {
		return String(this.groups).trim().toLowerCase() === 'auto';
	}

	#scaled(recipe: Recipe): Recipe {
		return this.softwareGpu ? forSoftwareGpu(recipe) : recipe;
	}

	#show(name: string, history: HistoryEntry[]): void {
		this.run = name;
		this.history = history;
		this.rows = rowsOf(history);
		this.#rowKey = this.rows.length;
		this.judgeTotals = { ...NO_JUDGE };
		this.judgeFailure = null;
		for (const h of history) this.#addJudge(h);
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
			this.#shownSettings = recipeSettings(recipe);
			this.#groupGames = recipe.grpo.groups * recipe.grpo.groupSize;
			this.sizing = null;
			this.#environment = recipe.environment;
			// the key goes beside the recipe (never in it), and only to a run RULER judges
			const ruler = !!recipe.reward && recipe.reward.source !== 'env';
			const judgeApiKey = ruler ? this.judgeKey.trim() : '';
			this.#recipe = recipe;
			this.paused = null;
			this.load = null;
			this.#loadStart = null;
			this.loadReports = 0;
			this.shift = null;
			this.#roundReplies.clear();
			this.#round = -1;
			const result = await backend.startRun(name, recipe, (event) => this.#onEvent(event), {
				...(judgeApiKey ? { judgeApiKey } : {}),
				stepThrough: this.stepThrough
			});
			if (result.ok) this.summary = result.value;
			else this.error = result.error;
		} catch (error) {
			// (the call could not even be made, e.g. a value the worker cannot receive)
			this.error = { kind: 'internal', message: (error as Error)?.message ?? String(error) };
		} finally {
			this.phase = 'idle';
			this.runPhase = null;
			this.progress = null;
			this.paused = null;
			await this.refresh();
		}
	}

	#addJudge(metrics: Record<string, unknown>): void {
		const j = judgeStep(metrics);
		if (!j) return;
		const t = this.judgeTotals;
		this.judgeTotals = {
			steps: t.steps + 1,
			dropped: t.dropped + j.dropped,
			tokens: t.tokens + j.promptTokens + j.completionTokens,
			cost: t.cost + j.cost,
			latencyMs: t.latencyMs + j.latencyMs
		};
	}

	#onEvent(event: RunEvent): void {
		switch (event.type) {
			case 'load': {
				const key = `${event.phase}:${event.file ?? ''}`;
				const now = performance.now();
				if (this.#loadStart?.key !== key) this.#loadStart = { key, t: now, loaded: event.loaded };
				const s = this.#loadStart;
				const seconds = (now - s.t) / 1000;
				this.load = {
					phase: event.phase,
					file: event.file,
					loaded: event.loaded,
					total: event.total,
					rate: seconds > 0.25 ? (event.loaded - s.loaded) / seconds : null
				};
				this.loadReports++;
				break;
			}
			case 'sized':
				this.sizing = event.reason;
				this.#groupGames = event.groups * event.groupSize;
				// (the step-through guide counts the games played)
				if (this.#recipe)
					this.#recipe = { ...this.#recipe, grpo: { ...this.#recipe.grpo, groups: event.groups } };
				break;
			case 'progress':
				this.progress = phaseProgress('update', event.done, event.total, this.#phaseStart);
				break;
			case 'phase':
				this.runPhase = event.phase;
				this.#phaseStart = performance.now();
				this.#phaseStep = event.step;
				this.progress =
					event.phase === 'rollouts'
						? phaseProgress('games', 0, this.#groupGames, this.#phaseStart)
						: null;
				if (event.phase !== 'loading') this.load = null;
				if (event.phase === 'rollouts') {
					this.rolloutsDone = 0;
					this.rolloutsTotal = this.#groupGames;
				}
				break;
			case 'rollout': {
				this.rolloutsDone = event.done;
				this.rolloutsTotal = event.total;
				this.progress = phaseProgress('games', event.done, event.total, this.#phaseStart);
				const game = gameOf(event, this.#environment);
				this.games = [game, ...this.games].slice(0, GAMES_SHOWN);
				if (event.round !== this.#round) {
					this.#round = event.round;
					this.#roundReplies.clear();
				}
				this.#roundReplies.set(`${event.round}-${event.group}-${event.index}`, game.replies);
				break;
			}
			case 'shift':
				this.shift = shiftView(event, (index) =>
					this.#roundReplies.get(`${event.round}-${event.group}-${index}`)
				);
				break;
			case 'group':
				// the guide works through the round's group with the widest spread of rewards
				if (
					!this.#guideGroup ||
					this.#guideGroup.round !== event.round ||
					spread(event.games) > spread(this.#guideGroup.games)
				)
					this.#guideGroup = event;
				for (const game of this.games)
					if (game.round === event.round && game.group === event.group)
						game.scored = event.games.find((g) => g.index === game.index);
				break;
			case 'step': {
				this.step = event.step;
				this.progress = null; // (the update is done, or was skipped)
				const judged = event.split === 'train' ? judgeStep(event.metrics) : null;
				this.rows.push({
					step: event.step,
					key: this.#rowKey++,
					split: event.split,
					reward: event.split === 'train' ? (event.metrics['train/reward'] ?? null) : null,
					loss: event.metrics[`${event.split}/loss`] ?? null,
					skipped: event.skipped ?? null,
					judge: judged?.score ?? null,
					game: judged?.game ?? null,
					dropped: judged ? judged.dropped : null,
					judgeFailure: event.judgeFailure ?? null
				});
				this.history.push({ step: event.step, recorded_at: '', ...event.metrics });
				if (event.judgeFailure) this.judgeFailure = event.judgeFailure;
				if (event.split === 'train') {
					this.#addJudge(event.metrics);
					this.#lastMetrics = event.metrics;
				}
				break;
			}
			case 'paused':
				if (this.#recipe)
					this.paused = {
						phase: event.phase,
						guide: phaseGuide(event.phase, {
							recipe: this.#recipe,
							group: this.#guideGroup ?? undefined,
							metrics: this.#lastMetrics,
							shift: this.shift ?? undefined,
							step: event.step
						})
					};
				break;
			case 'eval': {
				const { step, temperature, reward } = event.report;
				const key = temperature === 0 ? 'val/reward' : `val/reward_t${temperature}`;
				this.history.push({ step, recorded_at: '', [key]: reward });
				this.evaluations.push(event.report);
				break;
			}
			case 'end':
				this.summary = event.summary;
				break;
		}
	}
}
