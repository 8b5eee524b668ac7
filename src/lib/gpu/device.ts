/**
 * @file The one place that knows where a GPUDevice comes from: `navigator.gpu` in a page
 * or a Web Worker, Dawn (the `webgpu` npm package) in Node. The device is requested with
 * the adapter's own limits, not WebGPU's small defaults (a 545 MB embedding needs
 * them), and with the optional features kernels can use. Every kernel has a plain f32
 * path, so capabilities only ever make things faster.
 */
import {
	DeviceLostError,
	GpuValidationError,
	OutOfMemoryError,
	WebGpuUnavailableError
} from './errors';
import { tuningFor, withOverride, type GpuTuning } from './tuning';

/** Optional features that select faster kernel variants. */
export interface GpuCapabilities {
	/** `shader-f16`: f16 storage and arithmetic in WGSL. */
	f16: boolean;
	/** `subgroups`: subgroup reductions and shuffles. */
	subgroups: boolean;
	/** `chromium-experimental-subgroup-matrix`: cooperative matrix (tensor core) tiles. */
	subgroupMatrix: boolean;
	/** `timestamp-query`: GPU-side timing for benchmarks. */
	timestampQuery: boolean;
}

export interface GpuAdapterSummary {
	vendor: string;
	architecture: string;
	device: string;
	description: string;
	/** Where the device came from: 'navigator.gpu' or 'dawn (node)'. */
	backend: string;
	/** Subgroup sizes the adapter may use (0 when it does not say). */
	subgroupMinSize: number;
	subgroupMaxSize: number;
	/** Tile shapes `chromium-experimental-subgroup-matrix` supports (empty without it). */
	subgroupMatrixConfigs: readonly SubgroupMatrixConfig[];
	/** The adapter says it is a fallback (a CPU renderer such as SwiftShader). */
	isFallbackAdapter: boolean;
}

/** One supported subgroup-matrix shape: left M x K, right K x N, of componentType. */
export interface SubgroupMatrixConfig {
	componentType: string;
	resultComponentType: string;
	M: number;
	N: number;
	K: number;
}

export interface Gpu {
	readonly device: GPUDevice;
	readonly adapter: GpuAdapterSummary;
	readonly caps: GpuCapabilities;
	/** Every feature the device was created with, by name. */
	readonly features: string[];
	readonly limits: GPUSupportedLimits;
	/** How kernels size their dispatches on this device (tuning.ts: a table keyed on the
	 * adapter info, chosen at acquire). */
	readonly tuning: GpuTuning;
	/** Resolves once, when the device is lost for any reason but `destroy()`. */
	readonly lost: Promise<DeviceLostError>;
	/** True after the device was lost or destroyed: nothing may be submitted to it. */
	readonly isLost: boolean;
	/** Calls `listener` when the device is lost; returns a function that unsubscribes. */
	onLost(listener: (error: DeviceLostError) => void): () => void;
	/** Validation errors the device reported (a kernel bug): tests assert this stays empty. */
	readonly validationErrors: string[];
	/**
	 * Allocations the device refused for want of memory (GPUOutOfMemoryError, in order): the
	 * buffer is unusable and the work that uses it fails later, in its own words, so callers
	 * compare this list's length before and after to name the cause (run-host.ts).
	 */
	readonly outOfMemory: string[];
	/** Destroys the device (and with it every buffer); not reported as a loss. */
	destroy(): void;
}

export interface AcquireGpuOptions {
	powerPreference?: GPUPowerPreference;
	/** Turn capabilities off, e.g. `{ f16: false }` to test the f32 path on a device with f16. */
	disable?: Partial<Record<keyof GpuCapabilities, boolean>>;
	/** Node only: Dawn toggles, e.g. 'enable-dawn-features=allow_unsafe_apis'. */
	dawnToggles?: string[];
	/** Replace fields of the tuning the adapter's table row gives (tests, benchmarks). */
	tuning?: Partial<GpuTuning>;
}

const FEATURE_OF: Record<keyof GpuCapabilities, string> = {
	f16: 'shader-f16',
	subgroups: 'subgroups',
	subgroupMatrix: 'chromium-experimental-subgroup-matrix',
	timestampQuery: 'timestamp-query'
};

const BROWSER_ADVICE =
	'Use a browser with WebGPU: Chrome or Edge 113+ (on Linux start it with ' +
	'--enable-unsafe-webgpu), Safari 26+, or Firefox 141+ on Windows.';

/** Finds navigator.gpu (page or worker) or Dawn (Node); throws WebGpuUnavailableError. */
async function gpuEntry(toggles: string[]): Promise<{ gpu: GPU; backend: string }> {
	const nav = (globalThis as { navigator?: { gpu?: GPU } }).navigator;
	if (nav?.gpu) return { gpu: nav.gpu, backend: 'navigator.gpu' };
	const isNode = typeof process !== 'undefined' && !!process.versions?.node;
	if (!isNode) throw new WebGpuUnavailableError(`This browser has no WebGPU. ${BROWSER_ADVICE}`);
	// The one bridge to node/: loaded lazily, only in Node (a page has navigator.gpu above).
	// eslint-disable-next-line no-restricted-syntax
	const { nodeGpuEntry } = await import('./node/dawn');
	return { gpu: await nodeGpuEntry(toggles), backend: 'dawn (node)' };
}

/** Every numeric limit the adapter reports, to request them all. */
function adapterLimits(adapter: GPUAdapter): Record<string, number> {
	const out: Record<string, number> = {};
	// GPUSupportedLimits exposes its fields as prototype getters, so walk the prototype.
	for (const key in adapter.limits) {
		const value = (adapter.limits as unknown as Record<string, unknown>)[key];
		if (typeof value === 'number') out[key] = value;
	}
	return out;
}

export async function acquireGpu(options: AcquireGpuOptions = {}): Promise<Gpu> {
	const { gpu, backend } = await gpuEntry(options.dawnToggles ?? []);
	const adapter = await gpu.requestAdapter({
		powerPreference: options.powerPreference ?? 'high-performance'
	});
	if (!adapter) {
		throw new WebGpuUnavailableError(
			backend === 'navigator.gpu'
				? `WebGPU is present but no GPU adapter was granted (blocklisted driver or GPU disabled). ${BROWSER_ADVICE}`
				: 'Dawn found no Vulkan adapter. Install a GPU driver, or for the software ' +
						'renderer `apt-get install chromium libvulkan1` (SwiftShader ships with Chromium).'
		);
	}
	const caps = {} as GpuCapabilities;
	const wanted: string[] = [];
	for (const [cap, feature] of Object.entries(FEATURE_OF) as [keyof GpuCapabilities, string][]) {
		caps[cap] = adapter.features.has(feature) && !options.disable?.[cap];
		if (caps[cap]) wanted.push(feature);
	}
	// Lets subgroup variants pin their subgroup size; requesting it turns subgroups on too.
	if (caps.subgroups && adapter.features.has('subgroup-size-control'))
		wanted.push('subgroup-size-control');

	const device = await adapter.requestDevice({
		requiredFeatures: wanted as GPUFeatureName[],
		requiredLimits: adapterLimits(adapter)
	});
	const info = adapter.info as GPUAdapterInfo & {
		isFallbackAdapter?: boolean;
		subgroupMinSize?: number;
		subgroupMaxSize?: number;
		subgroupMatrixConfigs?: readonly SubgroupMatrixConfig[];
	};
	const summary: GpuAdapterSummary = {
		vendor: info?.vendor ?? '',
		architecture: info?.architecture ?? '',
		device: info?.device ?? '',
		description: info?.description ?? '',
		backend,
		subgroupMinSize: info?.subgroupMinSize ?? 0,
		subgroupMaxSize: info?.subgroupMaxSize ?? 0,
		subgroupMatrixConfigs: caps.subgroupMatrix
			? (info?.subgroupMatrixConfigs ?? []).map((c) => ({
					componentType: c.componentType,
					resultComponentType: c.resultComponentType,
					M: c.M,
					N: c.N,
					K: c.K
				}))
			: [],
		// GPUAdapterInfo.isFallbackAdapter; older implementations had it on the adapter.
		isFallbackAdapter: !!(
			info?.isFallbackAdapter ?? (adapter as { isFallbackAdapter?: boolean }).isFallbackAdapter
		)
	};
	let tuning: GpuTuning;
	try {
		tuning = withOverride(tuningFor(summary), options.tuning);
	} catch (error) {
		device.destroy(); // a bad override: nothing is left holding the device
		throw error;
	}
	return wrapDevice(device, caps, summary, tuning);
}

/** GPUOutOfMemoryError by class where the runtime has it, by name otherwise (Dawn in Node). */
function isOutOfMemory(error: GPUError): boolean {
	const Oom = (globalThis as { GPUOutOfMemoryError?: abstract new (...a: never[]) => GPUError })
		.GPUOutOfMemoryError;
	return (
		(Oom !== undefined && error instanceof Oom) ||
		error?.constructor?.name === 'GPUOutOfMemoryError'
	);
}

function wrapDevice(
	device: GPUDevice,
	caps: GpuCapabilities,
	adapter: GpuAdapterSummary,
	tuning: GpuTuning
): Gpu {
	const listeners = new Set<(error: DeviceLostError) => void>();
	let destroyed = false;
	let isLost = false;
	let resolveLost!: (error: DeviceLostError) => void;
	const lost = new Promise<DeviceLostError>((resolve) => (resolveLost = resolve));
	void device.lost.then((info) => {
		isLost = true;
		if (destroyed) return;
		const error = new DeviceLostError(info.reason ?? 'unknown', info.message ?? '');
		resolveLost(error);
		for (const listener of listeners) listener(error);
	});
	const validationErrors: string[] = [];
	const outOfMemory: string[] = [];
	device.addEventListener('uncapturederror', (event) => {
		const error = (event as GPUUncapturedErrorEvent).error;
		if (isOutOfMemory(error)) {
			outOfMemory.push(error.message);
			console.error(new OutOfMemoryError(error.message));
			return;
		}
		// A validation error is a bug in a kernel or its wrapper: make it loud, never silent.
		validationErrors.push(error.message);
		console.error(new GpuValidationError(error.message));
	});
	return {
		device,
		adapter,
		caps,
		features: [...device.features].sort(),
		limits: device.limits,
		tuning,
		lost,
		validationErrors,
		outOfMemory,
		get isLost() {
			return isLost;
		},
		onLost(listener) {
			listeners.add(listener);
			return () => listeners.delete(listener);
		},
		destroy() {
			destroyed = true;
			device.destroy();
		}
	};
}
