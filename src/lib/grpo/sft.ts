/**
 * @file The SFT loss on the logprobs grid: loss = -(1/N) sum over trained (b, t) of
 * logprob[b, t], dloss/dlogprob = -1/N, N the whole step's trained tokens (as Hugging Face's
 * Trainer with `num_items_in_batch`, which ART's train_sft uses), so micro-batches add up to
 * the one-batch loss. Input from pack.ts.
 */
import { InvalidBatchError } from './errors';
import { checkGrid } from './losses';

export interface SftBatch {
	B: number;
	/** [B, T - 1] from the model. */
	logprobs: ArrayLike<number>;
	/** [B, T - 1]: nonzero / true where the target token is trained. */
	mask: ArrayLike<number | boolean>;
}

export interface SftResult {
	/** This batch's share of the step's loss. */
	loss: number;
	/** [B, T - 1], 0 where the mask is 0. */
	dLogprobs: Float32Array;
	/** Trained tokens in this batch. */
	tokens: number;
}

/**
 * Loss and gradient of one (micro-)batch; `stepTokens` is the number of trained tokens of
 * the whole step (default: this batch's).
 */
export function sftLossAndGrad(batch: SftBatch, stepTokens?: number): SftResult {
	const { B, logprobs, mask } = batch;
	const cols = checkGrid(B, { logprobs, mask }, {});
	let tokens = 0;
	for (let i = 0; i < B * cols; i++) if (mask[i]) tokens++;
	const N = stepTokens ?? tokens;
	if (!(Number.isInteger(N) && N >= tokens))
		throw new InvalidBatchError(
			`stepTokens (${N}) must count every trained token of the step (this batch has ${tokens})`
		);
	const dLogprobs = new Float32Array(B * cols);
	let sum = 0;
	for (let i = 0; i < B * cols; i++) {
		if (!mask[i]) continue;
		const l = logprobs[i];
		if (!Number.isFinite(l))
			throw new InvalidBatchError(
				`logprob at trained position [${Math.floor(i / cols)}, ${i % cols}] is ${l}`
			);
		sum += l;
		dLogprobs[i] = -1 / N;
	}
	return { loss: N > 0 ? -sum / N : 0, dLogprobs, tokens };
}
