/**
 * @file A pool of storage buffers reused by size class, so a training step's many
 * temporaries do not allocate and free GPU memory each time.
 *
 * Sizes are rounded up to a class (powers of two below 1 MiB, then multiples of 1 MiB)
 * so a buffer serves any request of its class. A buffer given back is reused only after
 * the work already submitted to the queue is done with it: `giveBack` parks it until
 * `onSubmittedWorkDone`, so a later writer cannot race an earlier reader.
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
		const bytes = sizeClass(paddedByteLength(shape, dtype));
		checkBindable(this.gpu, bytes, `a pooled [${shape}] ${dtype} tensor`);
		const list = this.#free.get(bytes);
		let buffer = list?.pop();
		if (buffer) this.#freeBytes -= bytes;
		else buffer = this.gpu.device.createBuffer({ size: bytes, usage: STORAGE_USAGE });
		this.#liveBytes += bytes;
		return new Tensor(this.gpu, buffer, shape, dtype, { giveBack: (b) => this.#park(b) });
	}

	#park(buffer: GPUBuffer): void {
		const bytes = buffer.size;
		this.#liveBytes -= bytes;
		void this.gpu.device.queue.onSubmittedWorkDone().then(() => {
			if (this.gpu.isLost) return;
			let list = this.#free.get(bytes);
			if (!list) this.#free.set(bytes, (list = []));
			list.push(buffer);
			this.#freeBytes += bytes;
		});
	}

	/** Destroys every parked buffer (those in use stay theirs owners'). */
	trim(): void {
		for (const list of this.#free.values()) for (const b of list) b.destroy();
		this.#free.clear();
		this.#freeBytes = 0;
	}
}
