/**
 * @file Counts GPU buffers created and destroyed on a device while a callback runs, to
 * check that a refusal allocates nothing and a failure frees what it allocated.
 */
import type { Gpu } from '../../../../src/lib/gpu/device';

export interface BufferTally {
	created: number;
	/** Created during the callback and still alive after it. */
	alive: number;
}

export async function trackBuffers(gpu: Gpu, fn: () => Promise<unknown>): Promise<BufferTally> {
	const device = gpu.device as GPUDevice & { createBuffer: GPUDevice['createBuffer'] };
	const original = device.createBuffer;
	const live = new Set<GPUBuffer>();
	let created = 0;
	device.createBuffer = function (descriptor: GPUBufferDescriptor): GPUBuffer {
		const buffer = original.call(device, descriptor);
		// Uniform and staging buffers are the recorder's and readTensor's own temporaries.
		const storage = (descriptor.usage & 0x0080) !== 0;
		if (storage) {
			created++;
			live.add(buffer);
			const destroy = buffer.destroy.bind(buffer);
			buffer.destroy = () => {
				live.delete(buffer);
				destroy();
			};
		}
		return buffer;
	};
	try {
		await fn().catch(() => undefined);
	} finally {
		device.createBuffer = original;
	}
	return { created, alive: live.size };
}
