/**
 * @file What a generate() call and a Generator take and give back (GenerateOptions,
 * TokenConstraint, StepToken, GeneratedSequence, GeneratorOptions), and resolveOptions: a
 * call's options checked (GenerationOptionsError) and filled in with their defaults.
 */
import { MAX_TOP_LOGPROBS } from '../../gpu/kernels/top-logprobs';
import type { DecodeMatmulOptions } from '../transformer/decode-layer';
import { GenerationOptionsError } from '../errors';
import { randomSeed } from './seed';

export interface GenerateOptions {
	/** New tokens per sequence at most (finish 'length' when reached). */
	maxTokens: number;
	/** Default 1; <= 0 is greedy. */
	temperature?: number;
	/** Default 1 (off). */
	topP?: number;
	/** Default 0 (off). */
	topK?: number;
	/** Makes sampling reproducible: sequence i of the call samples with a key derived from
	 * (seed, i), so the same call repeats exactly and a sequence does not depend on its
	 * batch neighbours. Default: a random seed. */
	seed?: number;
	/** The Philox key of each prompt's sequence, overriding `seed`: lets one call decode the
	 * sequences of several seeded requests, each with the key it would have alone
	 * (`sequenceSeed(its seed, its index)`). One u32 per prompt. */
	sequenceKeys?: readonly number[];
	/** Token ids that end a sequence (finish 'stop', the stop token kept in ids). Default:
	 * the model config's eosTokenIds (generation_config.json). */
	stopTokenIds?: readonly number[];
	/** Ignore stop token ids (benchmarks). */
	ignoreEos?: boolean;
	/** Called after every decode step with the tokens that step produced, for streaming and
	 * stop strings; it returns the indices of sequences to stop now (finish 'stop'), or nothing. */
	onStep?: (tokens: readonly StepToken[]) => readonly number[] | void;
	/** Constrained decoding: prompt i's sequence samples only the tokens constraints[i]
	 * allows (undefined: any token). See TokenConstraint. */
	constraints?: readonly (TokenConstraint | undefined)[];
	/** The k (0..20) most likely tokens of every step with their logprobs
	 * (log_softmax(logits / T), as `logprob`); default 0: none, and no extra GPU work. */
	topLogprobs?: number;
	/** Aborts the call: checked between prefill layers, batches and decode steps; the call
	 * rejects with the signal's reason once the GPU work it submitted has finished. */
	signal?: AbortSignal;
}

/** One of a step's most likely tokens. */
export interface TopLogprob {
	id: number;
	logprob: number;
}

/**
 * What restricts one sequence's next token (constrained decoding: e.g. JSON of a schema,
 * model/constrain/). Before each step the Generator asks for the allowed tokens; after it,
 * it reports the token sampled. The sampler draws from the model's distribution
 * renormalised over the allowed tokens (top-k and top-p apply within them); the logprob
 * it reports stays the model's own, log_softmax(logits / T)[id] over the full vocabulary,
 * as for top-k and top-p (see sampling.ts). A sequence whose mask allows nothing ends
 * with finish 'stop'.
 */
export interface TokenConstraint {
	/** ORs the allowed next tokens into `mask` (bit id % 32 of word id / 32; the caller
	 * zeroes it; ceil(V / 32) words), the `stop` ids among them when the text may end here. */
	fillMask(mask: Uint32Array, stop: readonly number[]): void;
	/** The token just sampled (one the last mask allowed). */
	accept(id: number): void;
}

export interface StepToken {
	index: number;
	id: number;
	logprob: number;
	/** With topLogprobs: the step's k most likely tokens, most likely first. */
	top?: TopLogprob[];
}

export interface GeneratedSequence {
	promptIds: number[];
	/** New tokens only. */
	ids: number[];
	/** The sampling policy's logprob of each new token (log_softmax(logits / T)[id]). */
	logprobs: number[];
	/** With topLogprobs: per new token, the k most likely tokens at that step. */
	topLogprobs?: TopLogprob[][];
	finishReason: 'stop' | 'length';
}

export interface GeneratorOptions {
	/** Sequences decoded together at most; a call with more runs them in rounds of this
	 * many (seeds and indices stay those of the whole call). Default: autoBatch's. */
	maxBatch?: number;
	/** Context window (prompt + new tokens) at most; default and cap: the model's
	 * max_position_embeddings. */
	maxContext?: number;
	/** The decode step's matmul kernels (default: fused skinny kernels up to 32 sequences,
	 * see decode-layer.ts); benchmarks compare the variants. */
	decodeMatmul?: DecodeMatmulOptions;
	/** Padded tokens per prefill group at most (default: prefillTokenLimit's for the model);
	 * benchmarks compare. */
	prefillTokens?: number;
	/** Keep finished sequences' keys and values (prefix-store.ts) so a prompt that begins
	 * with one prefills only the rest: a game's next turn, a chat's next message. Default
	 * true; off where memory is short (it is skipped when it would not fit anyway). */
	prefixCache?: boolean;
	/** Prefill the prefixes a call's new prompts share (a step's first turns) once, and copy
	 * their keys and values to the others (shared-prefill.ts). Default true. */
	sharePrefixes?: boolean;
	/** How a prefill over cached tokens attends (extend.ts): 'blocks' (default; each key read
	 * once a block of a sequence's rows, 1.77x on SwiftShader) or 'rows' (one row a workgroup:
	 * 2.4x faster than 'blocks' on an H100 at 512 sequences x 40 rows over 200 cached);
	 * benchmarks compare. */
	extendAttention?: 'blocks' | 'rows';
	/** The prefix store's KV cache at most, bytes (default STORE_KV_BYTES, 2 GiB): past it
	 * the store holds fewer sequences than a call has, least recently used replaced. */
	prefixStoreBytes?: number;
	/** Keep one decode session across a game's turns: a kept session serves a call of fewer
	 * sequences (down to half its rows, or any number up to 32; the rows past the call's
	 * decode unread at position 0), and a new one is made with twice the slots its call needs
	 * where memory allows and its KV cache stays within the default batch's (a later turn's
	 * longer prompts then fit). Default true (1.11x a 512-game rollout on an H100); false: a
	 * session per batch size and length. */
	sessionSlack?: boolean;
	/** Decode with the adapter merged into a copy of its projections (merged-lora.ts): the
	 * plain products only, refreshed after each update. Default true where the projections
	 * are f32 and the copy is within MERGE_MAX_BYTES (the bundled models); false: the adapter
	 * applied on top, as the update computes it. */
	mergeLora?: boolean;
}

/** A call's options, checked and with their defaults. */
export interface ResolvedOptions {
	maxTokens: number;
	temperature: number;
	topP: number;
	topK: number;
	/** Top logprobs per step (0: none). */
	top: number;
	seed: number;
	keys: readonly number[] | undefined;
	stop: Set<number>;
}

export function resolveOptions(
	o: GenerateOptions,
	eos: readonly number[],
	vocab: number
): ResolvedOptions {
	const bad = (what: string) => {
		throw new GenerationOptionsError(what);
	};
	if (!(Number.isInteger(o.maxTokens) && o.maxTokens >= 1))
		bad(`maxTokens must be a positive integer, got ${o.maxTokens}`);
	const temperature = o.temperature ?? 1;
	if (!Number.isFinite(temperature)) bad(`temperature must be a finite number, got ${temperature}`);
	const topP = o.topP ?? 1;
	if (!(topP > 0 && topP <= 1)) bad(`topP must be in (0, 1], got ${topP}`);
	const topK = o.topK ?? 0;
	if (!(Number.isInteger(topK) && topK >= 0 && topK < 2 ** 32))
		bad(`topK must be a non-negative integer (0: off), got ${topK}`);
	const top = o.topLogprobs ?? 0;
	if (!(Number.isInteger(top) && top >= 0 && top <= Math.min(MAX_TOP_LOGPROBS, vocab)))
		bad(`topLogprobs must be an integer in [0, ${Math.min(MAX_TOP_LOGPROBS, vocab)}], got ${top}`);
	const seed = o.seed ?? randomSeed();
	if (!Number.isSafeInteger(seed)) bad(`seed must be an integer, got ${seed}`);
	const stopIds = o.ignoreEos ? [] : (o.stopTokenIds ?? eos);
	for (const id of stopIds)
		if (!(Number.isInteger(id) && id >= 0 && id < vocab))
			bad(`stop token id ${id} is outside the vocabulary [0, ${vocab})`);
	const keys = o.sequenceKeys;
	if (keys && !keys.every((k) => Number.isInteger(k) && k >= 0 && k < 2 ** 32))
		bad('sequenceKeys must be u32 integers, one per prompt');
	return {
		maxTokens: o.maxTokens,
		temperature,
		topP,
		topK,
		top,
		seed,
		keys,
		stop: new Set(stopIds)
	};
}
