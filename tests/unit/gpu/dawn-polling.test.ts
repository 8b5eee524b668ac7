/**
 * dawn.node's wait for the GPU on SwiftShader: its re-queued event processing goes through
 * a timer, not a setImmediate spin, and everything else keeps setImmediate as it was.
 */
import { describe, expect, it } from 'vitest';
import { dawnPollingFor, isDawnCallback } from '../../../src/lib/gpu/node/dawn-polling';
import { useGpu } from '../../helpers/gpu';

describe('dawn.node polling', () => {
	const gpu = useGpu();

	it('picks a timer on a software driver, the spin elsewhere, and honours the override', () => {
		expect(dawnPollingFor(true)).toBe('timer');
		expect(dawnPollingFor(false)).toBe('immediate');
		expect(dawnPollingFor(true, 'immediate')).toBe('immediate');
		expect(dawnPollingFor(false, 'timer')).toBe('timer');
		expect(() => dawnPollingFor(true, 'fast')).toThrow(/'timer' or 'immediate', not 'fast'/);
	});

	it("tells Dawn's callback from a promise's resolver, a bound function and a closure", () => {
		new Promise((resolve) => expect(isDawnCallback(resolve)).toBe(false));
		expect(isDawnCallback(function named() {}.bind(null))).toBe(false);
		expect(isDawnCallback(() => {})).toBe(false);
		expect(isDawnCallback(Math.random)).toBe(false);
	});

	it("routes Dawn's polling through setTimeout while a readback waits; other callers keep setImmediate", async () => {
		const { device } = gpu();
		const viaTimer: unknown[] = [];
		const timeout = globalThis.setTimeout;
		globalThis.setTimeout = ((fn: () => void, ms?: number, ...args: unknown[]) => {
			if (isDawnCallback(fn)) viaTimer.push(fn);
			return timeout(fn, ms, ...args);
		}) as typeof setTimeout;
		try {
			// Sixteen 32 MiB copies keep SwiftShader busy for a while, so Dawn polls again and again.
			const size = 32 << 20;
			const source = device.createBuffer({
				size,
				usage: GPUBufferUsage.COPY_SRC,
				mappedAtCreation: true
			});
			new Uint32Array(source.getMappedRange()).fill(7);
			source.unmap();
			const target = device.createBuffer({
				size,
				usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST
			});
			const encoder = device.createCommandEncoder();
			for (let i = 0; i < 16; i++) encoder.copyBufferToBuffer(source, 0, target, 0, size);
			device.queue.submit([encoder.finish()]);
			await target.mapAsync(GPUMapMode.READ);
			const words = new Uint32Array(target.getMappedRange());
			expect([words[0], words[words.length - 1]]).toEqual([7, 7]);
			source.destroy();
			target.destroy();
		} finally {
			globalThis.setTimeout = timeout;
		}
		expect(viaTimer.length).toBeGreaterThan(0);
		// A plain setImmediate still runs before a 0 ms timer queued after it would.
		const order: string[] = [];
		await new Promise<void>((done) => {
			setImmediate(() => order.push('immediate'));
			timeout(() => {
				order.push('timer');
				done();
			}, 5);
		});
		expect(order).toEqual(['immediate', 'timer']);
	});
});
