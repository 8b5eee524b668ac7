/**
 * @file The backend behind the worker boundary: it owns the GPU and answers the page in
 * the plain data of protocol.ts. It is written without any worker API, so the same object
 * runs in the Web Worker (tabrl.worker.ts exposes it through comlink) and in Node tests.
 * It probes the device, runs the kernel self-test and holds a loaded model (model-host.ts);
 * the worker (tabrl.worker.ts) adds runs and agent code's Backend over the same device.
 */
import { acquireGpu, type Gpu } from '../gpu/device';
import { compareArrays } from '../gpu/reference/allclose';
import { SELFTEST_CASES } from '../gpu/selftest';
import type { KernelCase } from '../gpu/selftest/types';
import { createModelHost, type ModelHostOptions } from './model-host';
import {
	toBackendError,
	type BackendApi,
	type BackendEvent,
	type CaseResult,
	type ComparisonResult,
	type GpuSummary,
	type SelfTestProgress,
	type SelfTestReport
} from './protocol';

export interface BackendOptions {
	/** The cases runSelfTest runs; SELFTEST_CASES by default. */
	cases?: KernelCase[];
	/** Where the GPU comes from; acquireGpu() by default. */
	acquire?: () => Promise<Gpu>;
	/** Where models come from and are cached (defaults: fetch and the Cache API). */
	models?: ModelHostOptions;
}

/** The backend, and the device getter its other parts (runs, agent code) share. */
export interface BackendCore extends BackendApi {
	/** The worker's one GPUDevice: acquired on first use, again after a loss. */
	gpu(): Promise<Gpu>;
}

export function createBackend(options: BackendOptions = {}): BackendCore {
	const cases = options.cases ?? SELFTEST_CASES;
	const acquire = options.acquire ?? (() => acquireGpu());
	const listeners = new Set<(event: BackendEvent) => void>();
	let current: Promise<Gpu> | undefined;

	function emit(event: BackendEvent): void {
		for (const listener of listeners) {
			// A listener on a page that went away rejects; drop it rather than fail.
			void Promise.resolve()
				.then(() => listener(event))
				.catch(() => listeners.delete(listener));
		}
	}

	/** The device, acquired on first use and again after a loss or a failed attempt. */
	function gpu(): Promise<Gpu> {
		if (current) return current;
		const pending = acquire().then((g) => {
			g.onLost((error) => {
				if (current === pending) current = undefined;
				emit({
					type: 'device-lost',
					error: { kind: 'device-lost', message: error.message, reason: error.reason }
				});
			});
			return g;
		});
		pending.catch(() => {
			if (current === pending) current = undefined;
		});
		current = pending;
		return pending;
	}

	const models = createModelHost(gpu, options.models);

	return {
		...models,
		gpu,

		async probe() {
			try {
				return { ok: true, value: summarize(await gpu()) };
			} catch (error) {
				return { ok: false, error: toBackendError(error) };
			}
		},

		async listCases() {
			return cases.map(({ family, name }) => ({ family, name }));
		},

		async runSelfTest(onProgress?: (progress: SelfTestProgress) => void) {
			let device: Gpu;
			try {
				device = await gpu();
			} catch (error) {
				return { ok: false, error: toBackendError(error) };
			}
			const start = performance.now();
			const results: CaseResult[] = [];
			for (const [index, kernelCase] of cases.entries()) {
				const result = await runCase(device, kernelCase, index);
				results.push(result);
				try {
					await onProgress?.({ done: results.length, total: cases.length, result });
				} catch {
					// The page stopped listening; the run still completes.
				}
				if (device.isLost) {
					const lost = await device.lost;
					return { ok: false, error: { kind: lost.kind, message: lost.message } };
				}
			}
			const passed = results.filter((r) => r.pass).length;
			const report: SelfTestReport = {
				results,
				passed,
				failed: results.length - passed,
				ms: performance.now() - start
			};
			return { ok: true, value: report };
		},

		async subscribe(listener) {
			listeners.add(listener);
		},

		async simulateDeviceLoss() {
			const device = await current?.catch(() => undefined);
			// Destroying the raw device (not Gpu.destroy) is reported as a loss, like a reset.
			device?.device.destroy();
		}
	};
}

function summarize(gpu: Gpu): GpuSummary {
	const limits: Record<string, number> = {};
	// GPUSupportedLimits exposes its fields as prototype getters: for..in walks them.
	for (const key in gpu.limits) {
		const value = (gpu.limits as unknown as Record<string, unknown>)[key];
		if (typeof value === 'number') limits[key] = value;
	}
	return {
		adapter: { ...gpu.adapter },
		features: [...gpu.features],
		caps: { ...gpu.caps },
		limits
	};
}

/** Rejects with the loss as soon as the device is lost, so no await on it can hang. */
function unlessLost<T>(gpu: Gpu, work: Promise<T>): Promise<T> {
	return Promise.race([
		work,
		gpu.lost.then((error) => {
			throw error;
		})
	]);
}

/**
 * Runs one case inside a validation error scope and judges every comparison with
 * compareArrays. It passes only if every comparison is close and the device reported no
 * validation error (a kernel bug can produce plausible numbers and still be a bug).
 */
async function runCase(gpu: Gpu, kernelCase: KernelCase, index: number): Promise<CaseResult> {
	const { family, name } = kernelCase;
	const start = performance.now();
	const done = (
		pass: boolean,
		maxAbsErr: number,
		message: string,
		comparisons = [] as ComparisonResult[]
	) => ({
		family,
		name,
		index,
		pass,
		maxAbsErr,
		message,
		ms: performance.now() - start,
		comparisons
	});
	if (gpu.isLost) return done(false, NaN, 'not run: the GPU device was lost');
	gpu.device.pushErrorScope('validation');
	let comparisons: ComparisonResult[];
	try {
		const raw = await unlessLost(gpu, kernelCase.run(gpu));
		comparisons = raw.map((cmp) => {
			const report = compareArrays(cmp.actual, cmp.expected, cmp);
			return {
				label: cmp.label,
				pass: report.pass,
				maxAbsErr: report.maxAbsErr,
				message: `${cmp.label}: ${report.message}`
			};
		});
	} catch (error) {
		await popScope(gpu);
		return done(false, NaN, `threw ${toBackendError(error).message}`);
	}
	const validation = [await popScope(gpu), ...gpu.validationErrors.splice(0)].filter(
		(m): m is string => !!m
	);
	const maxAbsErr = comparisons.reduce((worst, c) => Math.max(worst, c.maxAbsErr), 0);
	if (comparisons.length === 0) return done(false, NaN, 'the case compared nothing');
	if (validation.length > 0) {
		return done(false, maxAbsErr, `WebGPU validation error: ${validation.join('; ')}`, comparisons);
	}
	const failed = comparisons.filter((c) => !c.pass);
	const worst = comparisons.reduce((a, b) => (b.maxAbsErr > a.maxAbsErr ? b : a));
	const message = failed.length
		? failed.map((c) => c.message).join('; ')
		: `${comparisons.length} of ${comparisons.length} arrays close; worst ${worst.message}`;
	return done(failed.length === 0, maxAbsErr, message, comparisons);
}

/** Pops the case's error scope; its message if it caught one. Never throws or hangs. */
async function popScope(gpu: Gpu): Promise<string | undefined> {
	try {
		const error = await unlessLost(gpu, gpu.device.popErrorScope());
		return error?.message;
	} catch {
		return undefined;
	}
}
