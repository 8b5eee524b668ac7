/**
 * @file The run the Train panel shows, as Svelte 5 runes: its events (src/lib/run) folded
 * into what the status line, the charts, the steps table, the games and the step-through
 * guide show. A saved run's history is read once (`show`); from then on each step's event
 * appends its row. Sends nothing to the worker: train-session.svelte.ts drives the run.
 */
import type {
	EnvironmentName,
	EvaluationReport,
	GroupGame,
	PausePhase,
	Recipe,
	RunEvent,
	RunPhase,
	RunSummary
} from '../run';
import { DEFAULT_PRESET } from '../run';
import type { HistoryEntry } from '../agent/backend/types';
import type { LoadProgress } from '../util/throttle-progress';
import { chartData } from './chart-series';
import { phaseGuide, type PhaseGuide } from './phase-guide';
import { shiftView, type ShiftView } from './policy-shift';
import type { ReplyToken } from './reply-tokens';
import {
	addJudge,
	gameOf,
	NO_JUDGE,
	phaseProgress,
	rowsOf,
	spread,
	stepRow,
	type GameView,
	type JudgeTotals,
	type PhaseProgress,
	type StepRow
} from './run-rows';

/** Games kept for display (the newest). */
const GAMES_SHOWN = 8;

export class RunView {
	runPhase = $state<RunPhase | null>(null);
	/** The run shown: its model step and rows. */
	step = $state(0);
	rows = $state<StepRow[]>([]);
	/** The run's history lines (stored, then each step's and evaluation's event): the charts. */
	history = $state<HistoryEntry[]>([]);
	readonly charts = $derived(chartData(this.history));
	games = $state<GameView[]>([]);
	evaluations = $state<EvaluationReport[]>([]);
	rolloutsDone = $state(0);
	rolloutsTotal = $state(0);
	/** Auto sizing's last word: the games per step it chose and why (null: fixed sizes). */
	sizing = $state<string | null>(null);
	/** The judge's metrics summed over the steps shown. */
	judgeTotals = $state<JudgeTotals>({ ...NO_JUDGE });
	/** RULER: the last reason the judge failed on a group in this run, or null. */
	judgeFailure = $state<string | null>(null);
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
	/** Where a step-through run waits, and what the guide says there (null: not paused). */
	paused = $state<{ phase: PausePhase; guide: PhaseGuide } | null>(null);
	/** The run's recipe, the first scored group of the round and the last step's numbers, for the guide. */
	#recipe: Recipe | null = null;
	#guideGroup: { round: number; group: number; games: GroupGame[] } | null = null;
	#lastMetrics: Record<string, number> = {};
	#rowKey = 0;
	/** Games per round of the run going (known before the first one finishes). */
	#groupGames = 0;
	/** The environment of the run in progress (its replay draws the games). */
	#environment: EnvironmentName = DEFAULT_PRESET;

	/** Shows a run's stored history (its rows, charts and judge totals); nothing of a run going. */
	show(history: HistoryEntry[]): void {
		this.history = history;
		this.rows = rowsOf(history);
		this.#rowKey = this.rows.length;
		this.judgeTotals = { ...NO_JUDGE };
		this.judgeFailure = null;
		for (const h of history) this.judgeTotals = addJudge(this.judgeTotals, h);
		this.step = history.reduce((s, h) => Math.max(s, h.step), 0);
		this.evaluations = [];
		this.games = [];
		this.summary = null;
	}

	/** Shows no run (the one shown was deleted). */
	clear(): void {
		this.rows = [];
		this.history = [];
		this.step = 0;
		this.summary = null;
	}

	/** A run of `recipe` starts: what the last run left (load, shift, pause) goes. */
	begin(recipe: Recipe): void {
		this.#groupGames = recipe.grpo.groups * recipe.grpo.groupSize;
		this.sizing = null;
		this.#environment = recipe.environment;
		this.#recipe = recipe;
		this.paused = null;
		this.load = null;
		this.#loadStart = null;
		this.loadReports = 0;
		this.shift = null;
		this.#roundReplies.clear();
		this.#round = -1;
	}

	/** The run ended (finished, stopped or refused): no phase, no progress, no pause. */
	end(): void {
		this.runPhase = null;
		this.progress = null;
		this.paused = null;
	}

	/** Folds one of the run's events into what is shown. */
	apply(event: RunEvent): void {
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
			case 'step':
				this.step = event.step;
				this.progress = null; // (the update is done, or was skipped)
				this.rows.push(stepRow(this.#rowKey++, event));
				this.history.push({ step: event.step, recorded_at: '', ...event.metrics });
				if (event.judgeFailure) this.judgeFailure = event.judgeFailure;
				if (event.split === 'train') {
					this.judgeTotals = addJudge(this.judgeTotals, event.metrics);
					this.#lastMetrics = event.metrics;
				}
				break;
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
