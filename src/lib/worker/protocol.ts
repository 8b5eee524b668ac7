/**
 * @file The typed protocol between the page and the backend worker, shared by both sides:
 * comlink carries the calls; everything is plain cloneable data (no GPU objects or class
 * instances). Methods never throw across the boundary: they return a `Result`, errors as
 * `{ kind, message }`.
 */
import type { LoadProgress } from '../util/throttle-progress';
import type { Backend, HistoryEntry } from '../agent/backend/types';
import type { GpuAdapterSummary, GpuCapabilities } from '../gpu/device';
import type { AgentErrorKind } from '../agent/errors';
import type { RulerErrorKind } from '../agent/ruler/errors';
import type { GrpoErrorKind } from '../grpo/errors';
import type { RunMeta } from '../grpo/store/run-store';
import type { LiveSettings, Recipe, RunErrorKind, RunEvent, RunSummary } from '../run';
import type { GpuErrorKind } from '../gpu/errors';
import type { ModelErrorKind } from '../model/errors';
import type { StartRunOptions } from './run-host';

export type { StartRunOptions };

/** What can go wrong, as the page sees it: GPU- and model-layer kinds, the backend's own, and two of the transport. */
export type BackendErrorKind =
	| GpuErrorKind
	| ModelErrorKind
	/** scoreText with no model loaded (or the one loaded was lost with its device). */
	| 'no-model'
	/** Input the backend cannot take (an empty URL or text, a text longer than the model's context). */
	| 'invalid-input'
	/** Another model call (load, score, unload) is still running; try again when it ends. */
	| 'busy'
	/** The worker script failed to load or crashed (the page notices, not the worker). */
	| 'worker-failed'
	/** The training layers' kinds pass through as they are. */
	| GrpoErrorKind
	| AgentErrorKind
	| RunErrorKind
	/** RULER's judge: unreachable (or refusing this origin: CORS), the key refused, bad replies. */
	| RulerErrorKind
	/** An exception with no type of its own: a bug, reported with its message. */
	| 'internal';

export interface BackendError {
	kind: BackendErrorKind;
	message: string;
}

export type Result<T> = { ok: true; value: T } | { ok: false; error: BackendError };

/** The GPU the worker acquired: who made it, what it can do, how big it may go. */
export interface GpuSummary {
	adapter: GpuAdapterSummary;
	/** Every feature the device was created with, sorted. */
	features: string[];
	/** The optional features kernels select faster variants by. */
	caps: GpuCapabilities;
	/** Every numeric limit of the device (the adapter's own, requested in full). */
	limits: Record<string, number>;
}

/** One kernel self-test case, before it runs. */
export interface CaseInfo {
	family: string;
	name: string;
}

/** One array a case compared against its CPU reference. */
export interface ComparisonResult {
	label: string;
	pass: boolean;
	maxAbsErr: number;
	message: string;
}

/** One case, judged. `maxAbsErr` is the worst over its comparisons (NaN if it threw). */
export interface CaseResult extends CaseInfo {
	/** Position in SELFTEST_CASES. */
	index: number;
	pass: boolean;
	maxAbsErr: number;
	/** Why it failed, or the tolerance it passed at. */
	message: string;
	/** Wall time of the case in the worker: upload, kernels, readback, CPU reference. */
	ms: number;
	comparisons: ComparisonResult[];
}

/** Sent to the page after each case. */
export interface SelfTestProgress {
	done: number;
	total: number;
	result: CaseResult;
}

export interface SelfTestReport {
	results: CaseResult[];
	passed: number;
	failed: number;
	/** Wall time of the whole run in the worker. */
	ms: number;
}

/** Something that happened in the worker without being asked for. */
export type BackendEvent = {
	type: 'device-lost';
	/** `kind` is 'device-lost'; `reason` is GPUDeviceLostInfo.reason ('destroyed', 'unknown'). */
	error: BackendError & { reason: string };
};

/**
 * Progress of loadModel. 'download': weight-file bytes made available (downloaded, or read
 * from the cache), over all weight files; 'upload': weight bytes copied to the GPU.
 */
/** A model load's progress (the Model panel's and a run's): util/throttle-progress.ts. */
export type ModelLoadProgress = LoadProgress;

export interface LoadModelOptions {
	/**
	 * GPU memory the model may use, in bytes. WebGPU does not report a device's memory, so
	 * this is the user's knowledge; without it only the per-buffer limits are checked.
	 * A model over it is refused before its weights are downloaded.
	 */
	memoryBudgetBytes?: number;
}

/** The loaded model, as plain data. */
export interface ModelSummary {
	/** The URL prefix it was loaded from (with a trailing '/'). */
	url: string;
	architecture: string;
	layers: number;
	hiddenSize: number;
	intermediateSize: number;
	heads: number;
	kvHeads: number;
	headDim: number;
	/** Rows of the embedding (config.json's vocab_size). */
	vocabSize: number;
	/** Tokens the tokenizer knows (may be fewer than vocabSize). */
	tokenizerSize: number;
	tiedEmbeddings: boolean;
	/** The dtype config.json declares ('bfloat16', ...). */
	dtype: string;
	/** Parameters the architecture reads (tied embeddings counted once). */
	parameters: number;
	/** Bytes of tensor data in the weight files. */
	weightBytes: number;
	/** GPU memory of the weights as uploaded: 2 bytes per value of the f16 matrices (f16 /
	 * bf16 files, weight-dtype.ts), 4 per f32 value. */
	gpuBytes: number;
	hasChatTemplate: boolean;
	/**
	 * 'cache': every file came from the browser's model cache (no network request);
	 * 'network': at least one request was made.
	 */
	source: 'network' | 'cache';
	/** HTTP requests the load made (0 from the cache). */
	requests: number;
	/** Whether a model cache exists here (Cache API); without it every load downloads. */
	cacheAvailable: boolean;
	/** Wall time of the load in the worker, files and upload. */
	ms: number;
}

/** Per-token log-probabilities of a text under the loaded model. */
export interface TextScores {
	/** Token ids of the text (no special tokens added). */
	ids: number[];
	/**
	 * The text of each token: the pieces concatenate to the decoded text. A token that ends
	 * inside a UTF-8 character has '' and its bytes show with the token that completes it.
	 */
	tokens: string[];
	/** The vocabulary's spelling of each token (e.g. 'Ġhello' in byte-level BPE). */
	vocabTokens: string[];
	/** logprobs[i] = log p(ids[i] | ids[<i]); null for the first token (nothing precedes it). */
	logprobs: (number | null)[];
	/** Wall time of the forward pass (tokenizing included). */
	ms: number;
}

/** A text scored by a saved run's model: which run, at which step. */
export interface RunTextScores extends TextScores {
	run: string;
	step: number;
}

/** The backend's API, as the worker exposes it and the page calls it (through comlink). */
export interface BackendApi {
	/** Acquires the GPU (once; again after a loss) and describes it. */
	probe(): Promise<Result<GpuSummary>>;
	/** The registered self-test cases, in order, so the page can list them before they run. */
	listCases(): Promise<CaseInfo[]>;
	/**
	 * Runs every case in order, judging each with compareArrays. A case that throws or leaves
	 * a WebGPU validation error fails; the run goes on. A device loss ends the run with a
	 * 'device-lost' error instead of hanging.
	 */
	runSelfTest(onProgress?: (progress: SelfTestProgress) => void): Promise<Result<SelfTestReport>>;
	/** Registers a listener for unrequested events (device loss). */
	subscribe(listener: (event: BackendEvent) => void): Promise<void>;
	/**
	 * Testing aid: destroys the GPUDevice beneath the backend, as a driver reset would, so
	 * tests can watch the loss reach the page. The next probe or run acquires a new device.
	 */
	simulateDeviceLoss(): Promise<void>;
	/**
	 * Loads a Hugging Face model from a URL prefix (e.g.
	 * `https://huggingface.co/<repo>/resolve/main/`): config, tokenizer, weight headers
	 * (checked against the config, and the memory check, before any weight download), then
	 * the weights, downloaded or from the browser's cache, uploaded to the GPU. Any model
	 * already loaded is released first.
	 */
	loadModel(
		urlPrefix: string,
		onProgress?: (progress: ModelLoadProgress) => void,
		options?: LoadModelOptions
	): Promise<Result<ModelSummary>>;
	/** Tokenizes `text` (no special tokens added) and scores every token after the first. */
	scoreText(text: string): Promise<Result<TextScores>>;
	/** Releases the loaded model's GPU memory (nothing happens if none is loaded). */
	unloadModel(): Promise<Result<void>>;
}

/** Turns anything thrown into plain data for the boundary. */
export function toBackendError(error: unknown): BackendError {
	if (error && typeof error === 'object' && 'message' in error) {
		const kind = (error as { kind?: unknown }).kind;
		return {
			kind: typeof kind === 'string' ? (kind as BackendErrorKind) : 'internal',
			message: String((error as { message: unknown }).message)
		};
	}
	return { kind: 'internal', message: String(error) };
}

/** A saved run as the page lists it: its summary record (grpo/store/run-store.ts RunMeta). */
export type SavedRun = RunMeta;

/**
 * Runs in the worker (run/run-loop.ts driven by worker/run-host.ts): one at a time, its
 * events sent to the page as they happen. Every method settles into a Result.
 */
export interface RunApi {
	/**
	 * Starts (or resumes, if `name` is saved) a run of `recipe`; resolves when it ends. The
	 * RULER judge's API key comes in `options`, never in the recipe (which is saved with the
	 * run): the worker holds it for this run and sends it only to the judge.
	 */
	startRun(
		name: string,
		recipe: Recipe,
		onEvent?: (event: RunEvent) => void,
		options?: StartRunOptions
	): Promise<Result<RunSummary>>;
	/** Asks the running run to stop (within one rollout turn); false when none runs. */
	stopRun(): Promise<Result<boolean>>;
	/**
	 * A paused step-through run goes on (to its next pause, or with false to the end), with
	 * `settings` changed from then on (RunHost.continueRun).
	 */
	continueRun(keepStepping?: boolean, settings?: LiveSettings): Promise<Result<boolean>>;
	/** Saved runs, newest first. */
	listRuns(): Promise<Result<SavedRun[]>>;
	runHistory(name: string): Promise<Result<HistoryEntry[]>>;
	/**
	 * A text scored by a saved run's model as its last checkpoint left it (base, warm start,
	 * LoRA), loaded for it if need be; refused ('run-busy') while a run is going.
	 */
	scoreRunText(name: string, text: string): Promise<Result<RunTextScores>>;
	/** Deletes a saved run whole; refused while it runs. */
	deleteRun(name: string): Promise<Result<void>>;
	/** A saved run as one zip (grpo/store/run-archive.ts). */
	exportRun(name: string): Promise<Result<Uint8Array>>;
	/** Saves an exported run's zip as a new run (its name, or the first free NAME-2, ...). */
	importRun(archive: Uint8Array, name?: string): Promise<Result<SavedRun>>;
}

/** ART's Backend contract (agent/backend/types.ts) with each call settled into a Result,
 * for agent code in the page (worker/local-backend.ts turns failures back into throws). */
export type AgentApi = {
	[K in keyof Backend]: (
		...args: Parameters<Backend[K]>
	) => Promise<Result<Awaited<ReturnType<Backend[K]>>>>;
};

/** Everything the one worker serves. */
export interface WorkerApi extends BackendApi, RunApi {
	agent: AgentApi;
}

/** A failed call as agent code sees it: the error's kind survives the boundary. */
export class BackendCallError extends Error {
	constructor(
		readonly kind: string,
		message: string
	) {
		super(message);
		this.name = 'BackendCallError';
	}
}

/** Settles a call: its value, or its error as plain data. */
export async function settle<T>(call: () => Promise<T>): Promise<Result<T>> {
	try {
		return { ok: true, value: await call() };
	} catch (error) {
		return { ok: false, error: toBackendError(error) };
	}
}

/** A Result's value, or a thrown BackendCallError with its kind. */
export function unwrap<T>(result: Result<T>): T {
	if (result.ok) return result.value;
	throw new BackendCallError(result.error.kind, result.error.message);
}
