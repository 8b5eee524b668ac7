import { describe, expect, it, vi } from 'vitest';
import { acquireGpu } from '../../../src/lib/gpu/device';
import { DeviceLostError, OutOfMemoryError } from '../../../src/lib/gpu/errors';

describe('acquireGpu (Dawn in Node)', () => {
	it('requests the adapter limits, not the WebGPU defaults', async () => {
		const gpu = await acquireGpu();
		try {
			// WebGPU's default maxStorageBufferBindingSize is 128 MiB; SwiftShader and real GPUs offer more.
			expect(gpu.limits.maxStorageBufferBindingSize).toBeGreaterThan(128 * 2 ** 20);
			expect(gpu.limits.maxBufferSize).toBeGreaterThanOrEqual(
				gpu.limits.maxStorageBufferBindingSize
			);
			expect(gpu.adapter.backend).toBe('dawn (node)');
			expect(gpu.adapter.description.length).toBeGreaterThan(0);
			for (const [cap, feature] of [
				['f16', 'shader-f16'],
				['subgroups', 'subgroups'],
				['subgroupMatrix', 'chromium-experimental-subgroup-matrix'],
				['timestampQuery', 'timestamp-query']
			] as const) {
				expect(gpu.caps[cap], cap).toBe(gpu.features.includes(feature));
			}
		} finally {
			gpu.destroy();
		}
	});

	it('turns capabilities off on request', async () => {
		const gpu = await acquireGpu({ disable: { subgroups: true, timestampQuery: true } });
		try {
			expect(gpu.caps.subgroups).toBe(false);
			expect(gpu.features).not.toContain('subgroups');
			expect(gpu.caps.timestampQuery).toBe(false);
		} finally {
			gpu.destroy();
		}
	});

	it('records an allocation the device refuses as out of memory, not as a validation error', async () => {
		const gpu = await acquireGpu();
		const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
		try {
			// SwiftShader refuses one allocation of its whole maxBufferSize (1 GiB here) with
			// VK_ERROR_OUT_OF_DEVICE_MEMORY, without committing memory: a real, cheap OOM. A GPU
			// with the memory grants it, and then there is nothing to check.
			const size = gpu.limits.maxBufferSize;
			gpu.device.pushErrorScope('out-of-memory');
			const big = gpu.device.createBuffer({ size, usage: GPUBufferUsage.STORAGE });
			const refused = await gpu.device.popErrorScope();
			big.destroy();
			if (!refused) return;
			// the same refusal uncaptured: reported through the device's event, sorted out
			const again = gpu.device.createBuffer({ size, usage: GPUBufferUsage.STORAGE });
			again.destroy();
			for (let i = 0; i < 100 && gpu.outOfMemory.length === 0; i++)
				await new Promise((r) => setTimeout(r, 10));
			expect(gpu.outOfMemory).toHaveLength(1);
			expect(gpu.outOfMemory[0]).toMatch(/OUT_OF_DEVICE_MEMORY|memory/i);
			expect(gpu.validationErrors).toEqual([]);
			const error = logged.mock.calls[0]?.[0];
			expect(error).toBeInstanceOf(OutOfMemoryError);
			expect((error as OutOfMemoryError).kind).toBe('out-of-memory');
			expect((error as OutOfMemoryError).message).toMatch(
				/^The GPU ran out of memory \(.+\)\. Use smaller batches/
			);
		} finally {
			logged.mockRestore();
			gpu.destroy();
		}
	});

	it('surfaces a lost device as a typed event, and destroy() as no loss', async () => {
		const gpu = await acquireGpu();
		const seen: DeviceLostError[] = [];
		gpu.onLost((e) => seen.push(e));
		// Destroying the raw GPUDevice behind the wrapper's back is a loss the app did not ask for.
		gpu.device.destroy();
		const error = await gpu.lost;
		expect(error).toBeInstanceOf(DeviceLostError);
		expect(error.kind).toBe('device-lost');
		expect(error.message).toMatch(/lost/);
		expect(seen).toEqual([error]);
		expect(gpu.isLost).toBe(true);

		const other = await acquireGpu();
		let reported = false;
		other.onLost(() => (reported = true));
		other.destroy();
		await new Promise((r) => setTimeout(r, 50));
		expect(other.isLost).toBe(true);
		expect(reported).toBe(false);
	});
});

describe('acquireGpu without any Vulkan driver', () => {
	it('says what is missing and how to get it', async () => {
		const { execFile } = await import('node:child_process');
		const script =
			"import('./src/lib/gpu/device.ts').then(m => m.acquireGpu())" +
			".then(() => console.log('acquired'), e => console.log(JSON.stringify({ kind: e.kind, message: e.message })))";
		const out = await new Promise<string>((resolve, reject) =>
			execFile(
				'npx',
				['tsx', '--eval', script],
				{ env: { ...process.env, VK_ICD_FILENAMES: '/nonexistent/icd.json' } },
				(error, stdout) => (error ? reject(error) : resolve(stdout))
			)
		);
		const result = JSON.parse(out.trim().split('\n').pop()!);
		expect(result.kind).toBe('webgpu-unavailable');
		expect(result.message).toMatch(/apt-get install chromium libvulkan1/);
	});
});
