/**
 * @file What the Train panel shows of a run, as plain values made from its events and stored
 * history: a step's row (one function, for a stored history line and a live 'step' event
 * alike), the judge's totals, a finished game's view and a phase's progress. No state here:
 * run-view.svelte.ts folds the events and keeps these.
 */
import { ENVIRONMENTS, type EnvironmentName, type GroupGame, type RunEvent } from '../run';
import type { HistoryEntry } from '../agent/backend/types';
import { trajectoryFromJson } from '../agent/jsonl';
import type { ReplayItem } from '../agent/envs/replay';
import { judgeStep } from './reward-form';
import { replyTokens, type ReplyToken } from './reply-tokens';

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

/** One step as its row needs it: from a 'step' event, or from a stored history line. */
export interface StepOf {
	step: number;
	split: 'train' | 'sft';
	metrics: Record<string, unknown>;
	skipped?: string | null;
	judgeFailure?: string | null;
}

const numberAt = (metrics: Record<string, unknown>, key: string) =>
	typeof metrics[key] === 'number' ? (metrics[key] as number) : null;

/** A step's row in the steps table; `key` is its position there. */
export function stepRow(key: number, s: StepOf): StepRow {
	const judged = s.split === 'train' ? judgeStep(s.metrics) : null;
	return {
		step: s.step,
		key,
		split: s.split,
		reward: s.split === 'train' ? numberAt(s.metrics, 'train/reward') : null,
		loss: numberAt(s.metrics, `${s.split}/loss`),
		skipped: s.skipped ?? null,
		judge: judged?.score ?? null,
		game: judged?.game ?? null,
		dropped: judged ? judged.dropped : null,
		judgeFailure: s.judgeFailure ?? null
	};
}

/** The rows of a stored history: its train and SFT steps (the judge's failures are not stored). */
export function rowsOf(history: HistoryEntry[]): StepRow[] {
	return history
		.filter((h) => typeof h['train/reward'] === 'number' || typeof h['sft/loss'] === 'number')
		.map((h, key) =>
			stepRow(key, {
				step: h.step,
				split: typeof h['sft/loss'] === 'number' ? 'sft' : 'train',
				metrics: h,
				skipped: h['train/skipped'] === 1 ? 'no-signal' : null
			})
		);
}

/** What the judge cost over the steps shown. */
export interface JudgeTotals {
	steps: number;
	dropped: number;
	tokens: number;
	cost: number;
	latencyMs: number;
}

export const NO_JUDGE: JudgeTotals = { steps: 0, dropped: 0, tokens: 0, cost: 0, latencyMs: 0 };

/** `totals` with a step's judge metrics added (unchanged for a step RULER did not judge). */
export function addJudge(totals: JudgeTotals, metrics: Record<string, unknown>): JudgeTotals {
	const j = judgeStep(metrics);
	if (!j) return totals;
	return {
		steps: totals.steps + 1,
		dropped: totals.dropped + j.dropped,
		tokens: totals.tokens + j.promptTokens + j.completionTokens,
		cost: totals.cost + j.cost,
		latencyMs: totals.latencyMs + j.latencyMs
	};
}

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

/** A rollout event as its game is shown, drawn by `env`'s replay. */
export function gameOf(
	event: Extract<RunEvent, { type: 'rollout' }>,
	env: EnvironmentName
): GameView {
	let items: ReplayItem[];
	try {
		items = ENVIRONMENTS[env].replay(trajectoryFromJson(event.trajectory));
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

/** The spread (max - min) of a group's rewards. */
export const spread = (games: readonly GroupGame[]) =>
	games.length
		? Math.max(...games.map((g) => g.reward)) - Math.min(...games.map((g) => g.reward))
		: 0;

/** A phase's progress as the status line shows it (RunView.progress). */
export interface PhaseProgress {
	what: 'games' | 'update' | 'evaluation';
	done: number;
	total: number;
	/** Seconds left at the pace so far; null before anything is done. */
	secondsLeft: number | null;
}

/** `done` of `total` since `start` (performance.now()), with the seconds left at that pace. */
export function phaseProgress(
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
