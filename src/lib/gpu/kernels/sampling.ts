/**
 * @file Next-token sampling: one dispatch over logits [B, V] with per-row temperature,
 * top-k, top-p and seed, writing token ids [B] and logprobs [B] (design: sampling.wgsl.ts).
 * The logprob is log_softmax(logits / T) over the full vocabulary, what GRPO's ratios compare
 * (greedy: T = 1). A token depends only on its row, parameters, seed and `step`, never on the
 * batch. `mask` (u32 [B, ceil(V / 32)], bit set = allowed) restricts greedy, top-k, top-p and
 * the draw to allowed tokens; the logprob stays the full vocabulary's.
 */
import { assertShape } from '../errors';
import { Params, type Recorder } from '../kernel';
import type { Tensor } from '../tensor';
import { sampleTokensSource, samplingWorkgroupSize } from './sampling.wgsl';

const SAMPLE = {
	64: { name: 'sampling.sample_tokens.wg64', code: sampleTokensSource(64) },
	256: { name: 'sampling.sample_tokens.wg256', code: sampleTokensSource(256) }
};
const SAMPLE_MASKED = {
	64: { name: 'sampling.sample_tokens_masked.wg64', code: sampleTokensSource(64, true) },
	256: { name: 'sampling.sample_tokens_masked.wg256', code: sampleTokensSource(256, true) }
};

export interface SampleTokensArgs {
	/** f32 [B, V], row-major. */
	logits: Tensor;
	/** f32 [B]; <= 0 means greedy. */
	temperature: Tensor;
	/** u32 [B]; 0 (or >= V) turns top-k off. */
	topK: Tensor;
	/** f32 [B]; >= 1 turns top-p off. */
	topP: Tensor;
	/** u32 [B]: the Philox key of each row. */
	seeds: Tensor;
	/** u32 [B], written. */
	tokens: Tensor;
	/** f32 [B], written: log_softmax(logits / T)[token] over the full vocabulary. */
	logprobs: Tensor;
	/** The Philox counter: the index of the token being generated (u32). */
	step: number;
	/** u32 [B, ceil(V / 32)]: the allowed tokens of each row (constrained decoding). */
	mask?: Tensor;
}

/** Samples one token per row of `logits` (see the file comment for what is written). */
export function sampleTokens(rec: Recorder, args: SampleTokensArgs): void {
	const { logits, temperature, topK, topP, seeds, tokens, logprobs, step, mask } = args;
	assertShape(
		logits.shape.length === 2 && logits.dtype === 'f32' && logits.shape[1] >= 1,
		() =>
			`sampleTokens: logits must be f32 [B, V] with V >= 1; got ${logits.dtype} [${logits.shape}]`
	);
	const [rows, vocab] = logits.shape;
	const perRow: [string, Tensor, string][] = [
		['temperature', temperature, 'f32'],
		['topK', topK, 'u32'],
		['topP', topP, 'f32'],
		['seeds', seeds, 'u32'],
		['tokens', tokens, 'u32'],
		['logprobs', logprobs, 'f32']
	];
	for (const [name, t, dtype] of perRow) {
		assertShape(
			t.size === rows && t.dtype === dtype,
			() =>
				`sampleTokens: ${name} must be ${dtype} [${rows}] for logits [${logits.shape}]; got ${t.dtype} [${t.shape}]`
		);
	}
	if (!(Number.isInteger(step) && step >= 0 && step < 2 ** 32)) {
		throw new RangeError(`sampleTokens: step must be a u32, got ${step}`);
	}
	const words = Math.ceil(vocab / 32);
	assertShape(
		!mask || (mask.dtype === 'u32' && mask.size === rows * words),
		() =>
			`sampleTokens: mask must be u32 [${rows}, ${words}] (ceil(V / 32) words per row) for logits [${logits.shape}]; got ${mask!.dtype} [${mask!.shape}]`
	);
	if (rows === 0) return;
	const params = new Params().u32(rows).u32(vocab).u32(step);
	const wg = samplingWorkgroupSize(vocab);
	const bindings = [logits, temperature, topK, topP, seeds, tokens, logprobs];
	if (mask) rec.dispatch(SAMPLE_MASKED[wg], [...bindings, mask], rows, params);
	else rec.dispatch(SAMPLE[wg], bindings, rows, params);
}
