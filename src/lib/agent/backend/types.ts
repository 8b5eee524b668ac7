/**
 * @file The backend contract: what a TrainableModel (where agent code runs) asks of the
 * backend owning the GPU, as ART splits `art.Model` from `LocalBackend`. Everything across
 * it is plain, cloneable data (ids, configs, metrics, JSON, a ReadableStream for SSE), so it
 * is served in-process in Node and from a Web Worker alike; errors carry a `kind`.
 */
import type { LoraConfig } from '../../model/transformer/lora';
import type { ScoredText } from '../../model/score-text';
import type { WarmStartMode } from '../../model/hf/warm-start';
import type { GrpoStepConfig } from '../../grpo/train-step';
import type { AdvantageOptions } from '../../grpo/advantages';
import type { Message, Tools } from '../trajectory';
import type { TrainSequence } from '../to-train';

/** What register() needs to know: ART's TrainableModel fields, TypeScript names. */
export interface ModelSpec {
	name: string;
	project: string;
	/** Where the base model's files are: a folder (Node) or a URL prefix (browser). */
	baseModel: string;
	/** LoRA rank, alpha and targets (ART's defaults: r 8, alpha 16, every projection). */
	lora?: Partial<Pick<LoraConfig, 'rank' | 'alpha' | 'targetModules'>>;
	/** Seeds LoRA A's initialisation (default 0). */
	seed?: number;
	/** Prompt + reply tokens at most (default: the model's max_position_embeddings). */
	maxContext?: number;
	/** Sequences decoded together at most (default 64). */
	maxBatch?: number;
	/**
	 * A warm-start adapter (PEFT folder or URL prefix holding adapter_config.json,
	 * adapter_model.safetensors and, for shipped ones, warm-start.json) applied to the base
	 * before training: 'merged' (default) folds it into the base weights and trains a fresh
	 * adapter whose LoRA-off reference is the warm-start policy; 'stacked' starts the
	 * trainable adapter from it (model/hf/warm-start.ts). Refused for another base.
	 */
	warmStart?: { adapter: string; mode?: WarmStartMode };
	/** The configuration driving the run (a src/lib/run recipe), kept with the run's summary. */
	recipe?: unknown;
}

export interface Registration {
	/** The step the adapter is at: the latest checkpoint's, 0 for a new run. */
	step: number;
	/** The LoRA settings in use (from the checkpoint when resuming). */
	lora: LoraConfig;
	contextLength: number;
	/** Steps with a saved checkpoint, ascending. */
	checkpoints: number[];
}

/**
 * One GRPO step's settings: the learning rate (ART's TrainConfig.learning_rate) and the
 * algorithm's knobs (grpo/train-step.ts, grpo/losses.ts; ART's defaults throughout).
 */
export interface TrainConfig extends Omit<GrpoStepConfig, 'lr'>, AdvantageOptions {
	/** Default: the optimizer's (5e-6, ART's). */
	learningRate?: number;
}

export interface SftConfig {
	/** Default 5e-6 (the optimizer's). */
	learningRate?: number;
	/** Conversations per optimizer step (default: all in one step). */
	batchSize?: number;
	/** Passes over the data (default 1). */
	epochs?: number;
	/** Padded tokens per micro-batch (default: one micro-batch per step). */
	tokenBudget?: number;
	/** Shuffle order before each epoch with this seed (default: keep the order). */
	shuffleSeed?: number;
}

/** A conversation to imitate: its assistant turns are trained (ART's trainSft input). */
export interface SftConversation {
	messages: Message[];
	tools?: Tools;
}

/** Metrics of a step as ART names them in history.jsonl: `split/metric`. */
export type StepMetrics = Record<string, number>;

export interface TrainReport {
	/** The model's step after the call (unchanged when skipped). */
	step: number;
	/** Why nothing changed: nothing to learn, or a non-finite gradient. */
	skipped?: 'no-signal' | 'non-finite-grad';
	metrics: StepMetrics;
	warnings: string[];
	/** For each probed sequence (TrainInput.probe): its trained tokens' probabilities. */
	probe?: ProbedSequence[];
}

/** A sequence's sampled tokens before the update (as sampled) and after it. */
export interface ProbedSequence {
	/** Its index in TrainInput.sequences. */
	sequence: number;
	/** The trained tokens' ids, in order (the first PROBE_TOKENS of them at most). */
	ids: number[];
	/** log p at sampling, and under the updated policy (same temperature). */
	before: number[];
	after: number[];
}

/** Tokens of a probed sequence reported at most. */
export const PROBE_TOKENS = 32;

/** What the frontend sends for one GRPO step. */
export interface TrainInput {
	sequences: TrainSequence[];
	/** Rollout metrics computed by the frontend (rewards, exceptions, ...), logged with the step. */
	metrics: StepMetrics;
	/** The step's trajectory groups in ART's JSONL (agent/jsonl.ts), kept with its checkpoint. */
	trajectories?: string;
	/**
	 * Sequences (indices into `sequences`) whose sampled tokens are scored again after the
	 * update, to show how it moved them (TrainReport.probe).
	 */
	probe?: number[];
}

/** One line of history.jsonl. */
export interface HistoryEntry {
	step: number;
	/** ISO time. */
	recorded_at: string;
	[metric: string]: number | string;
}

export interface DeleteCheckpointsOptions {
	/** Keep the best checkpoint by this history metric (higher is better); default 'val/reward'. */
	bestBy?: string;
}

/** A chat request as the OpenAI client sends it (no transport, no signal). */
export interface ChatRequest {
	method: string;
	path: string;
	body?: string;
	/** The body as an object instead (the local client's whole chat completions). */
	json?: unknown;
}

/**
 * How one chat call is made. The signal stops the request's decode in the engine (a stopped
 * rollout's turn frees the GPU at the next token); it works where the backend is in the
 * caller's process: an AbortSignal cannot cross a worker boundary, so the page's
 * LocalBackend over the worker drops it.
 */
export interface ChatCallOptions {
	signal?: AbortSignal;
}

/** A JSON answer, or a stream of SSE frames (`data: ...\n\n`). */
export type ChatReply =
	{ status: number; json: unknown } | { status: 200; sse: ReadableStream<string> };

/** A PEFT adapter folder as files (adapter_config.json, adapter_model.safetensors). */
export type AdapterFiles = Record<string, Uint8Array>;

export interface Backend {
	register(spec: ModelSpec): Promise<Registration>;
	/** Answers one OpenAI request; `options.signal` (same process only) stops its decode. */
	chat(name: string, request: ChatRequest, options?: ChatCallOptions): Promise<ChatReply>;
	train(name: string, input: TrainInput, config?: TrainConfig): Promise<TrainReport>;
	trainSft(name: string, data: SftConversation[], config?: SftConfig): Promise<TrainReport[]>;
	getStep(name: string): Promise<number>;
	/** Appends metrics to the model's history at its current step. */
	log(name: string, metrics: StepMetrics): Promise<void>;
	history(name: string): Promise<HistoryEntry[]>;
	/** Deletes all checkpoints but the latest and the best by a metric; returns the deleted steps. */
	deleteCheckpoints(name: string, options?: DeleteCheckpointsOptions): Promise<number[]>;
	/** The adapter of a checkpoint (default: the current weights) in PEFT's format. */
	exportAdapter(name: string, step?: number): Promise<AdapterFiles>;
	/** A text's tokens scored by the model as it is now (its warm start and LoRA applied). */
	scoreText(name: string, text: string): Promise<ScoredText>;
	/** Frees the model's GPU memory (its checkpoints stay). */
	unregister(name: string): Promise<void>;
	/** Frees everything (the device included). */
	close(): Promise<void>;
}
