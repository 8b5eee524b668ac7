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

/** A scored group of a round, as the guide works it through. */
interface GuideGroup {
	round: number;
	group: number;
	games: GroupGame[];
}

/** Games kept for display (the newest). */
const GAMES_SHOWN = 8;

export class RunView {
	/** The name of the run shown (null: none), which the form's may no longer be once a
	 * preset is chosen for the next run. */
	run = $state<string | null>(null);
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
	/** The model's step whose next games were played last (an evaluation may come after them). */
	#playedStep = $state<number | null>(null);

	/**
	 * The step the status line names: while games are played and trained on (and evaluated
	 * between the two: eval.afterGames), the step being made (the steps table's next row);
	 * otherwise the model's step.
	 */
	get shownStep(): number {
		const making =
			this.runPhase === 'rollouts' ||
			this.runPhase === 'train' ||
			(this.runPhase === 'eval' && this.#playedStep === this.#phaseStep);
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
	/** `guided`: the group the guide works through (its cards are outlined), if any. */
	paused = $state<{
		phase: PausePhase;
		guide: PhaseGuide;
		guided?: { round: number; group: number };
	} | null>(null);
	/** The run's recipe, the first scored group of the round and the last step's numbers, for the guide. */
	#recipe: Recipe | null = null;
	/** The round's scored groups (the guide picks one to work through). */
	#roundGroups: GuideGroup[] = [];
	#lastMetrics: Record<string, number> = {};
	#rowKey = 0;
	/** Games per round of the run going (known before the first one finishes). */
	#groupGames = 0;
	/** The environment of the run in progress (its replay draws the games). */
	#environment: EnvironmentName = DEFAULT_PRESET;

	/**
	 * The group the guide works through: of the round's groups with games on cards, the one
	 * with the widest spread of rewards (then the most cards); else the widest of all.
	 */
	#guideGroup(): GuideGroup | undefined {
		const cards = (g: GuideGroup) =>
			this.games.filter((x) => x.round === g.round && x.group === g.group).length;
		const better = (a: GuideGroup, b: GuideGroup) =>
			spread(a.games) - spread(b.games) || cards(a) - cards(b);
		const shown = this.#roundGroups.filter((g) => cards(g) > 0);
		const pool = shown.length ? shown : this.#roundGroups;
		return pool.reduce<GuideGroup | undefined>(
			(best, g) => (!best || better(g, best) > 0 ? g : best),
			undefined
		);
	}

	/**
	 * The guide's group as its cards show it: its games on cards in their order (newest
	 * first), then the rest by index; `shown` of them are on cards.
	 */
	#asShown(g: GuideGroup) {
		const onCards = this.games.filter((x) => x.round === g.round && x.group === g.group);
		const at = (index: number) => onCards.findIndex((x) => x.index === index);
		const games = [...g.games].sort((a, b) => {
			const [i, j] = [at(a.index), at(b.index)];
			if (i >= 0 && j >= 0) return i - j;
			return i >= 0 ? -1 : j >= 0 ? 1 : a.index - b.index;
		});
		return { group: g.group, games, shown: games.filter((x) => at(x.index) >= 0).length };
	}

	/** Shows run `name`'s stored history (its rows, charts and judge totals); nothing of a
	 * run going. */
	show(name: string, history: HistoryEntry[]): void {
		this.run = name;
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
		this.run = null;
		this.rows = [];
		this.history = [];
		this.games = [];
		this.evaluations = [];
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
		this.#roundGroups = [];
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
				this.progress = phaseProgress(
					event.phase === 'eval' ? 'evaluation' : 'update',
					event.done,
					event.total,
					this.#phaseStart
				);
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
					this.#playedStep = event.step;
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
				this.shift = shiftView(
					event,
					(index) => this.#roundReplies.get(`${event.round}-${event.group}-${index}`),
					this.#recipe?.grpo.klBeta
				);
				break;
			case 'group':
				if (this.#roundGroups[0]?.round !== event.round) this.#roundGroups = [];
				this.#roundGroups.push({ round: event.round, group: event.group, games: event.games });
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
			case 'paused': {
				if (!this.#recipe) break;
				const groups = this.#roundGroups;
				const pick = this.#guideGroup();
				this.paused = {
					phase: event.phase,
					guide: phaseGuide(event.phase, {
						recipe: this.#recipe,
						group: pick ? this.#asShown(pick) : undefined,
						signal: groups.length ? groups.some((g) => spread(g.games) > 0) : undefined,
						metrics: this.#lastMetrics,
						shift: this.shift ?? undefined,
						step: event.step
					}),
					...(pick && (event.phase === 'advantages' || event.phase === 'update')
						? { guided: { round: pick.round, group: pick.group } }
						: {})
				};
				break;
			}
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
