/**
 * @file What TransformerModel's calls take and give back: the model's options, a call's
 * options, the scored logprobs [B, T - 1] and the gradient a backward is given.
 */
import type { LoraConfig } from './lora';
import type { WeightDtypePolicy } from '../hf/weight-dtype';
import type { SharedPrefixInput } from './shared-prefix';
import type { LayerWeights } from '../hf/weights';

export interface TransformerOptions {
	/** LoRA adapters to create (defaults filled in: r 8, alpha 16, all 7 projections);
	 * omitted: no adapters (scoring only). */
	lora?: Partial<LoraConfig>;
	/** Seeds LoRA A's initialisation. */
	seed?: number;
	/** Total GPU memory the model may use (WebGPU does not report it); calls whose
	 * estimate exceeds it are refused before anything is allocated. */
	memoryBudgetBytes?: number;
	/** Training activations: 'recompute' keeps only each layer's input and recomputes the
	 * layer's forward in the backward (least memory); 'keep' keeps every layer's activations
	 * (no recompute: about a quarter less work, and the memory PyTorch's eager mode uses);
	 * 'auto' (default) keeps them when the estimate with them fits in `memoryBudgetBytes`,
	 * and recomputes when no budget is given (WebGPU cannot say how much memory there is). */
	activations?: ActivationPolicy;
	/** Largest chunk of the embedding / lm_head (tests force chunking with it). */
	maxChunkBytes?: number;
	/** Dtype of the projections, embedding and lm_head on the GPU (weight-dtype.ts): 'auto'
	 * (default) keeps f16 / bf16 checkpoints in f16 where that is exact or within 1e-3,
	 * 'f16' forces f16, 'f32' widens. Norms and biases are f32 always. */
	weightDtype?: WeightDtypePolicy;
	/** Weight upload progress (bytes done, total). */
	onProgress?(doneBytes: number, totalBytes: number): void;
}

export type ActivationPolicy = 'auto' | 'keep' | 'recompute';

export interface CallOptions {
	/** Use the LoRA adapters (default true when the model has them); false: base model. */
	lora?: boolean;
	/** Divides the logits, as sampling at that temperature did; default 1. */
	temperature?: number;
	/** The rows continue these shared prefixes (run once; the rows' positions start at
	 * their length). The logprobs are the rows' own: a row's first token is not scored. */
	prefix?: SharedPrefixInput;
}

export interface ScoreResult {
	B: number;
	T: number;
	/** [B, T - 1]: log p(ids[b, t + 1] | ids[b, <= t]); NaN past each sequence's end. */
	logprobs: Float32Array;
}

/** dLoss/dlogprobs [B, T - 1] (entries with no target are ignored), or a function of the
 * forward's logprobs that returns it (one forward serves both the loss and the backward). */
export type LogprobGrad =
	ArrayLike<number> | ((logprobs: Float32Array) => ArrayLike<number> | Promise<ArrayLike<number>>);

export interface BackwardOptions extends Omit<CallOptions, 'lora'> {
	/** Add into the LoRA gradients (micro-batch accumulation) instead of overwriting them. */
	accumulate?: boolean;
	/** This call's activation policy (default: the model's `activations`). */
	activations?: ActivationPolicy;
}

/** Per-layer weights whose adapter-targeted projections hold W' = W + s B A, and whether
 * they hold the adapter as it is now (useMergedWeights). */
export interface MergedWeights {
	readonly current: boolean;
	readonly layers: readonly LayerWeights[];
}
