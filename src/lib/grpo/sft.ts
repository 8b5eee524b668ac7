/**
 * @file The supervised fine-tuning loss on the logprobs grid: the mean negative logprob of
 * the trained tokens, and its gradient, for TransformerModel.forwardBackward.
 *
 *   loss = -(1/N) sum_{trained (b, t)} logprob[b, t],   dloss/dlogprob[b, t] = -1/N
 *
 * N counts the trained tokens of the whole step (every micro-batch), as Hugging Face's
 * Trainer does with `num_items_in_batch` when it accumulates a causal-LM loss (ART's
 * train_sft trains through it, src/art/preprocessing/tokenize.py `tokenize_sft_batch`
 * counts `num_trainable_tokens`); so micro-batches add up to the one-batch loss. Input
 * comes from pack.ts (`rolloutLogprobs` and `advantage` are not used).
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
