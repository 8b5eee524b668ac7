/**
 * @file What the OpenAI layer needs of a generation engine: `generate(prompts, options)`
 * as src/lib/model/generation.ts's Generator offers it (see the contract in that file).
 * Declared structurally here so that a real Generator satisfies it with no adapter and the
 * pure parts of this layer (validation, parsing, response building) compile without it.
 */

export interface StepToken {
	/** The sequence's index in the generate call's prompt list. */
	index: number;
	id: number;
	logprob: number;
}

export interface EngineOptions {
	/** New tokens per sequence at most (finish 'length' when reached). */
	maxTokens: number;
	/** <= 0 is greedy. */
	temperature?: number;
	topP?: number;
	topK?: number;
	/** Sequence i of the call samples with a key derived from (seed, i). */
	seed?: number;
	stopTokenIds?: readonly number[];
	/** Called after each decode step; returns the indices of sequences to stop now. */
	onStep?: (tokens: readonly StepToken[]) => readonly number[] | void;
	signal?: AbortSignal;
}

export interface EngineSequence {
	promptIds: number[];
	/** New tokens only (a stop token is kept). */
	ids: number[];
	/** The sampling policy's logprob of each new token. */
	logprobs: number[];
	finishReason: 'stop' | 'length';
}

/** A generation engine: one call decodes all `prompts` together. */
export interface ChatEngine {
	/** The context window (prompt + new tokens) a sequence may use. */
	readonly contextLength?: number;
	generate(
		prompts: readonly (readonly number[])[],
		options: EngineOptions
	): Promise<EngineSequence[]>;
}
