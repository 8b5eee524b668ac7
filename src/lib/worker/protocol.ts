/**
 * @file The typed protocol between the page and the backend worker, shared by both sides
 * (the idea WebLLM follows: one file of message types, no untyped postMessage). comlink
 * carries the calls; everything here is plain data that survives structured cloning:
 * no GPU objects, no class instances, errors as `{ kind, message }` (class identity does
 * not cross a worker boundary, `kind` does). Methods never throw across the boundary:
 * they return a `Result`, so the page switches on `ok` and `error.kind`.
 */
import type { GpuAdapterSummary, GpuCapabilities } from '../gpu/device';
import type { GpuErrorKind } from '../gpu/errors';

/** What can go wrong, as the page sees it. GPU-layer kinds, plus two of the transport. */
export type BackendErrorKind =
	| GpuErrorKind
	/** The worker script failed to load or crashed (the page notices, not the worker). */
	| 'worker-failed'
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
