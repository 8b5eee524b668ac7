/**
 * @file The step-wide normaliser of TRL's aggregations (S sequences, n_i trained tokens of
 * sequence i, N = sum n_i): grpo (1/S) sum_i (1/n_i) sum_t; dr_grpo (1/(S L)) sum_i sum_t
 * with L = maxCompletionLength (default: the step's longest trained span); dapo (1/N) sum.
 * Planned once over the whole step, so any split into micro-batches gives exactly the
 * one-batch loss and gradient.
 */
import { InvalidBatchError } from './errors';
import { resolveLossConfig, type Aggregation, type LossConfig } from './loss-config';

/** The step-wide normaliser of an aggregation: computed once over every sequence of the
 * step, then shared by its micro-batches. */
export interface StepNormaliser {
	aggregation: Aggregation;
	/** Sequences with at least one trained token. */
	sequences: number;
	/** Trained tokens of the step. */
	tokens: number;
	/** dr_grpo's L. */
	maxCompletionLength: number;
}

/** The normaliser of a step from each sequence's trained-token count (all micro-batches). */
export function planNormaliser(
	trainedTokensPerSequence: readonly number[],
	config: LossConfig = {}
): StepNormaliser {
	const c = resolveLossConfig(config);
	let sequences = 0;
	let tokens = 0;
	let longest = 0;
	for (const n of trainedTokensPerSequence) {
		if (!(Number.isInteger(n) && n >= 0))
			throw new InvalidBatchError(`trained-token counts must be integers >= 0; got ${n}`);
		if (n === 0) continue;
		sequences++;
		tokens += n;
		longest = Math.max(longest, n);
	}
	return {
		aggregation: c.aggregation,
		sequences,
		tokens,
		maxCompletionLength: c.maxCompletionLength ?? Math.max(1, longest)
	};
}

/** The factor each trained token of a sequence with `trainedTokens` tokens gets. */
export function tokenWeight(norm: StepNormaliser, trainedTokens: number): number {
	if (trainedTokens === 0 || norm.tokens === 0) return 0;
	switch (norm.aggregation) {
		case 'grpo':
			return 1 / (norm.sequences * trainedTokens);
		case 'dr_grpo':
			return 1 / (norm.sequences * norm.maxCompletionLength);
		case 'dapo':
			return 1 / norm.tokens;
	}
}
