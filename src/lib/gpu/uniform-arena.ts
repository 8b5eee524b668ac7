/**
 * @file A recorder's uniform parameters packed into shared 64 KiB uniform buffers (pages),
 * one slot per dispatch at the device's offset alignment, written with one writeBuffer per
 * page just before the submit: a buffer per dispatch cost much host time per step. A page
 * is free again once that submit is made (the queue runs in order).
 */
import type { Gpu } from './device';

/** The WebGPU default maxUniformBufferBindingSize: every device grants it. */
const PAGE_BYTES = 65536;
const UNIFORM_COPY_DST = 0x0040 | 0x0008;

interface Page {
	buffer: GPUBuffer;
	bytes: Uint8Array<ArrayBuffer>;
	used: number;
}

const freePages = new WeakMap<GPUDevice, GPUBuffer[]>();

export class UniformArena {
	readonly #pages: Page[] = [];

	constructor(readonly gpu: Gpu) {}

	/** Copies `data` into a fresh slot; returns the binding that reads it. */
	put(data: ArrayBuffer): GPUBufferBinding {
		const size = data.byteLength;
		const align = this.gpu.limits.minUniformBufferOffsetAlignment;
		let page = this.#pages.at(-1);
		if (!page || page.used + size > PAGE_BYTES) page = this.#newPage();
		const offset = page.used;
		page.bytes.set(new Uint8Array(data), offset);
		page.used = Math.ceil((offset + size) / align) * align;
		return { buffer: page.buffer, offset, size };
	}

	/** Writes every page to the GPU and gives the pages back; call right before submit. */
	flush(): void {
		const free = this.#freeList();
		for (const page of this.#pages.splice(0)) {
			this.gpu.device.queue.writeBuffer(page.buffer, 0, page.bytes, 0, page.used);
			free.push(page.buffer);
		}
	}

	#newPage(): Page {
		const buffer =
			this.#freeList().pop() ??
			this.gpu.device.createBuffer({ size: PAGE_BYTES, usage: UNIFORM_COPY_DST });
		const page = { buffer, bytes: new Uint8Array(PAGE_BYTES), used: 0 };
		this.#pages.push(page);
		return page;
	}

	#freeList(): GPUBuffer[] {
		let list = freePages.get(this.gpu.device);
		if (!list) freePages.set(this.gpu.device, (list = []));
		return list;
	}
}
