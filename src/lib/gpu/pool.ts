/**
 * @file Storage buffers reused by size class (powers of two below 1 MiB, then MiB
 * multiples), so a step's temporaries are not allocated each time. `returnIdle` (every
 * user submitted, e.g. a Recorder's scratch) makes a buffer reusable at once, the queue
 * being in order; a pooled tensor's `release()` parks it until onSubmittedWorkDone, since
 * work reading it may still be being recorded.
 */
import type { Gpu } from './device';
import { Tensor, STORAGE_USAGE, checkBindable, paddedByteLength, type DType } from './tensor';

const MIB = 1 << 20;

export function sizeClass(bytes: number): number {
	if (bytes <= MIB) return Math.max(256, 2 ** Math.ceil(Math.log2(bytes)));
	return Math.ceil(bytes / MIB) * MIB;
}

export class BufferPool {
	readonly #free = new Map<number, GPUBuffer[]>();
	#liveBytes = 0;
	#freeBytes = 0;

	constructor(readonly gpu: Gpu) {}

	/** Bytes held by buffers in use and parked in the pool. */
	get stats(): { liveBytes: number; freeBytes: number } {
		return { liveBytes: this.#liveBytes, freeBytes: this.#freeBytes };
	}

	/** A tensor backed by a pooled buffer; its `release()` gives the buffer back. */
	tensor<D extends DType>(shape: readonly number[], dtype: D): Tensor<D> {
		const buffer = this.acquire(
			paddedByteLength(shape, dtype),
			`a pooled [${shape}] ${dtype} tensor`
		);
		return new Tensor(this.gpu, buffer, shape, dtype, { giveBack: (b) => this.#park(b) });
	}

	/** A raw buffer of at least `bytes` (a whole size class), for work whose end the caller
	 * knows: give it back with `returnIdle` once all work using it is submitted. */
	acquire(bytes: number, what = `a pooled ${bytes}-byte buffer`): GPUBuffer {
		const size = sizeClass(bytes);
		checkBindable(this.gpu, size, what);
		let buffer = this.#free.get(size)?.pop();
		if (buffer) this.#freeBytes -= size;
		else buffer = this.gpu.device.createBuffer({ size, usage: STORAGE_USAGE });
		this.#liveBytes += size;
		return buffer;
	}

	/** Takes back a buffer from `acquire` that no work still to be submitted uses. */
	returnIdle(buffer: GPUBuffer): void {
		this.#liveBytes -= buffer.size;
		this.#keep(buffer);
	}

	#park(buffer: GPUBuffer): void {
		const bytes = buffer.size;
		this.#liveBytes -= bytes;
		void this.gpu.device.queue.onSubmittedWorkDone().then(() => this.#keep(buffer));
	}

	#keep(buffer: GPUBuffer): void {
		if (this.gpu.isLost) return;
		let list = this.#free.get(buffer.size);
		if (!list) this.#free.set(buffer.size, (list = []));
		list.push(buffer);
		this.#freeBytes += buffer.size;
	}

	/** Destroys every parked buffer (those in use stay theirs owners'). */
	trim(): void {
		for (const list of this.#free.values()) for (const b of list) b.destroy();
		this.#free.clear();
		this.#freeBytes = 0;
	}
}
