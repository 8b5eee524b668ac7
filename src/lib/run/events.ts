/**
 * @file What a run tells its watchers, as plain data (it crosses the worker boundary):
 * phase changes, each finished rollout with its trajectory (ART's JSON shape), each
 * step's metrics, each evaluation, and the end with its status.
 */
import type { PolicyShift } from '../agent/model';
import type { LoadProgress } from '../util/throttle-progress';
import type { StepMetrics } from '../agent/backend/types';
import type { TrajectoryJson } from '../agent/jsonl';

export type RunPhase = 'loading' | 'sft' | 'rollouts' | 'train' | 'eval';

/**
 * How a run ended: 'done' (reached its steps), 'stopped' (asked to), 'stuck' (no reward
 * spread for maxNoSignal steps in a row: nothing to learn from; more SFT may help).
 */
export type RunStatus = 'done' | 'stopped' | 'stuck';

export interface RunSummary {
	status: RunStatus;
	/** Why, in words: e.g. 'no reward spread in 3 rounds in a row at GRPO step 4 (...)'. */
	reason: string;
	/** The model's step (SFT steps included) and the GRPO steps done. */
	step: number;
	grpoStep: number;
	/** Mean train reward of the last GRPO step (null: none ran in this call). */
	reward: number | null;
	/** The last evaluation's greedy score (null: none). */
	evalReward: number | null;
}

export interface EvaluationReport {
	step: number;
	temperature: number;
	games: number;
	/** Mean reward over the games. */
	reward: number;
	/** Environment-specific numbers (illegal moves, wins, ...). */
	metrics: Record<string, number>;
	seconds: number;
}

export type RunEvent =
	| { type: 'phase'; phase: RunPhase; step: number }
	| {
			/**
			 * A phase's progress: the update's `done` of `total` micro-batches forward and
			 * backward, or an evaluation's games finished of those it may play.
			 */
			type: 'progress';
			phase: 'train' | 'eval';
			/** The model's step before the update. */
			step: number;
			done: number;
			total: number;
	  }
	| {
			/**
			 * Games per step chosen (auto sizing, sizing.ts): before the first GRPO step played and
			 * after each trained one; `reason` says what was measured, for the page and the CLI.
			 */
			type: 'sized';
			/** The step whose rollouts play at this size (the model's step before them). */
			step: number;
			groups: number;
			groupSize: number;
			reason: string;
	  }
	| {
			type: 'rollout';
			/** The GRPO step the rollout is for (the model's step before the update). */
			step: number;
			/** The round of games it belongs to (a step retried after no spread plays another). */
			round: number;
			group: number;
			index: number;
			/** Rollouts finished in this round, of `total`. */
			done: number;
			total: number;
			reward: number;
			trajectory: TrajectoryJson;
	  }
	| {
			type: 'step';
			split: 'train' | 'sft';
			/** The model's step after it. */
			step: number;
			/** Untrained: no reward spread, a non-finite gradient, or (RULER) the judge failed on every group. */
			skipped?: 'no-signal' | 'non-finite-grad' | 'judge-failed';
			/** RULER: why the judge failed on a group of this round (the last such failure). */
			judgeFailure?: string;
			metrics: StepMetrics;
	  }
	| {
			/**
			 * A group of games scored, before the update (as each completes; with RULER, once the
			 * judge has scored it): what GRPO will train on, game by game.
			 */
			type: 'group';
			/** The GRPO step the group is for, and its round (as the rollouts' events). */
			step: number;
			round: number;
			group: number;
			games: GroupGame[];
	  }
	| {
			/**
			 * Step-through (RunOptions.pause): the run waits here until the pause resolves.
			 * `step` is the GRPO step being made (the model's step before its update; after it
			 * for 'updated').
			 */
			type: 'paused';
			phase: PausePhase;
			step: number;
	  }
	| { type: 'eval'; report: EvaluationReport }
	/**
	 * After an update (RunOptions.policyShift): how it moved the sampled tokens of the best
	 * and the worst game of the round's group with the widest spread. `step`: after it.
	 */
	| ({ type: 'shift'; step: number; round: number } & PolicyShift)
	/** The run's model loading (phase 'loading'): its base's download, its weights' upload. */
	| ({ type: 'load' } & LoadProgress)
	| { type: 'end'; summary: RunSummary };

/**
 * Where a step-through run pauses, in the order of a GRPO step: the games played and scored
 * ('rewards'), their group-relative advantages ('advantages'), just before the update
 * ('update'), and after it ('updated'), before the next step's games.
 */
export type PausePhase = 'rewards' | 'advantages' | 'update' | 'updated';

/** One game of a scored group, by its index in the group (its rollout event's `index`). */
export interface GroupGame {
	index: number;
	/** The reward trained on (RULER's score, or its mix with the game's, when a judge scored). */
	reward: number;
	/** Its group-relative advantage, as GRPO computes it: (reward − mean) / (std + 1e-6). */
	advantage: number;
	/** RULER: the judge's score and explanation. */
	judgeScore?: number;
	explanation?: string;
}
