/**
 * @file What a run tells its watchers, as plain data (it crosses the worker boundary):
 * phase changes, each finished rollout with its trajectory (ART's JSON shape), each
 * step's metrics, each evaluation, and the end with its status.
 */
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
			type: 'rollout';
			/** The GRPO step the rollout is for (the model's step before the update). */
			step: number;
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
	| { type: 'eval'; report: EvaluationReport }
	| { type: 'end'; summary: RunSummary };
