/**
 * @file Per-kernel GPU time: while a profiler is attached, every Recorder dispatch runs in a
 * compute pass of its own with timestampWrites, labelled by kernel name, and each submit's
 * timestamps are summed per name. One dispatch per pass serializes work that would
 * overlap, so totals are upper bounds: compare kernels with each other, not with wall time.
 */
import type { Gpu } from './device';
import { MissingFeatureError } from './errors';

/** Timestamp pairs one submit may record (WebGPU allows 4096 queries in a set); more
 * dispatches than this in one submit go untimed and are counted. */
const CAPACITY = 2048;

export interface KernelTime {
	name: string;
	count: number;
	totalMs: number;
}

const attached = new WeakMap<GPUDevice, KernelProfiler>();

/** The profiler attached to this device, if any (Recorder asks on every dispatch). */
export function profilerOf(gpu: Gpu): KernelProfiler | undefined {
	return attached.get(gpu.device);
}

export class KernelProfiler {
	readonly #querySet: GPUQuerySet;
	readonly #names: string[] = [];
	readonly #totals = new Map<string, KernelTime>();
	#untimed = 0;

	constructor(readonly gpu: Gpu) {
		if (!gpu.caps.timestampQuery) throw new MissingFeatureError('timestamp-query', 'Profiling');
		this.#querySet = gpu.device.createQuerySet({ type: 'timestamp', count: CAPACITY * 2 });
		attached.set(gpu.device, this);
	}

	/** Timestamp writes for the next dispatch's pass, or undefined once this submit is full. */
	passTimestamps(name: string): GPUComputePassTimestampWrites | undefined {
		const i = this.#names.length;
		if (i >= CAPACITY) {
			this.#untimed++;
			return undefined;
		}
		this.#names.push(name);
		return {
			querySet: this.#querySet,
			beginningOfPassWriteIndex: 2 * i,
			endOfPassWriteIndex: 2 * i + 1
		};
	}

	/** Encodes the resolve of this submit's timestamps; returns a function to await after
	 * the submit that adds them to the totals. */
	resolve(encoder: GPUCommandEncoder): (() => Promise<void>) | undefined {
		const names = this.#names.splice(0);
		if (names.length === 0) return undefined;
		const bytes = names.length * 2 * 8;
		const resolved = this.gpu.device.createBuffer({ size: bytes, usage: 0x0200 | 0x0004 }); // QUERY_RESOLVE | COPY_SRC
		const staging = this.gpu.device.createBuffer({ size: bytes, usage: 0x0001 | 0x0008 }); // MAP_READ | COPY_DST
		encoder.resolveQuerySet(this.#querySet, 0, names.length * 2, resolved, 0);
		encoder.copyBufferToBuffer(resolved, 0, staging, 0, bytes);
		return async () => {
			await staging.mapAsync(0x0001);
			const ticks = new BigUint64Array(staging.getMappedRange());
			names.forEach((name, i) => {
				const ns = Number(ticks[2 * i + 1] - ticks[2 * i]);
				const t = this.#totals.get(name) ?? { name, count: 0, totalMs: 0 };
				t.count++;
				t.totalMs += Math.max(0, ns) / 1e6;
				this.#totals.set(name, t);
			});
			staging.destroy();
			resolved.destroy();
		};
	}

	/** Totals per kernel name, largest first, and dispatches that went untimed. */
	report(): { kernels: KernelTime[]; totalMs: number; untimed: number } {
		const kernels = [...this.#totals.values()].sort((a, b) => b.totalMs - a.totalMs);
		return {
			kernels,
			totalMs: kernels.reduce((s, k) => s + k.totalMs, 0),
			untimed: this.#untimed
		};
	}

	reset(): void {
		this.#totals.clear();
		this.#untimed = 0;
	}

	detach(): void {
		attached.delete(this.gpu.device);
		this.#querySet.destroy();
	}
}
