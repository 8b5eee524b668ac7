/**
 * @file The backend the worker exposes, run in Node on Dawn: what probe reports, how the
 * self-test judges cases (pass, wrong numbers, a throw, nothing compared, a validation
 * error), that results are plain data, and that a device loss ends a run instead of hanging.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { acquireGpu, type Gpu } from '../../../src/lib/gpu/device';
import { WebGpuUnavailableError } from '../../../src/lib/gpu/errors';
import { RMSNORM_SELFTEST } from '../../../src/lib/gpu/selftest/rmsnorm';
import type { KernelCase } from '../../../src/lib/gpu/selftest/types';
import { createBackend } from '../../../src/lib/worker/backend';
import type { BackendEvent, SelfTestProgress } from '../../../src/lib/worker/protocol';

const acquired: Gpu[] = [];
async function acquire(): Promise<Gpu> {
	const gpu = await acquireGpu();
	acquired.push(gpu);
	return gpu;
}
afterAll(() => acquired.forEach((g) => g.destroy()));

const TOL = { atol: 1e-6, rtol: 0 };
const fake = (name: string, run: KernelCase['run']): KernelCase => ({ family: 'fake', name, run });

describe('backend probe', () => {
	it('describes the device as plain data', async () => {
		const backend = createBackend({ acquire, cases: [] });
		const result = await backend.probe();
		if (!result.ok) throw new Error(result.error.message);
		const { adapter, features, caps, limits } = result.value;
		expect(adapter.backend).toBe('dawn (node)');
		expect(features).toEqual([...features].sort());
		expect(caps.subgroups).toBe(features.includes('subgroups'));
		expect(limits.maxStorageBufferBindingSize).toBeGreaterThan(0);
		expect(limits.maxComputeInvocationsPerWorkgroup).toBeGreaterThanOrEqual(256);
		expect(structuredClone(result)).toEqual(result);
		// The device is acquired once and reused.
		const again = await backend.probe();
		expect(again.ok).toBe(true);
		expect(acquired.length).toBe(1);
	});

	it('returns WebGPU-unavailable as a typed error, not a throw', async () => {
		const backend = createBackend({
			acquire: () => Promise.reject(new WebGpuUnavailableError('no WebGPU here')),
			cases: []
		});
		expect(await backend.probe()).toEqual({
			ok: false,
			error: { kind: 'webgpu-unavailable', message: 'no WebGPU here' }
		});
		const run = await backend.runSelfTest();
		expect(run.ok).toBe(false);
		if (!run.ok) expect(run.error.kind).toBe('webgpu-unavailable');
	});
});

describe('backend self-test', () => {
	it('judges each case and reports progress in order', async () => {
		const cases: KernelCase[] = [
			RMSNORM_SELFTEST[0],
			fake('close', async () => [{ label: 'y', actual: [1, 2], expected: [1, 2 + 1e-7], ...TOL }]),
			fake('wrong', async () => [
				{ label: 'ok', actual: [1], expected: [1], ...TOL },
				{ label: 'dx', actual: [1, 2.5], expected: [1, 2], ...TOL }
			]),
			fake('throws', async () => {
				throw new Error('kernel exploded');
			}),
			fake('empty', async () => []),
			fake('invalid', async (gpu) => {
				// MAP_READ may only be combined with COPY_DST: a validation error.
				gpu.device.createBuffer({
					size: 4,
					usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.STORAGE
				});
				return [{ label: 'y', actual: [0], expected: [0], ...TOL }];
			})
		];
		const backend = createBackend({ acquire, cases });
		expect(await backend.listCases()).toEqual(cases.map(({ family, name }) => ({ family, name })));
		const progress: SelfTestProgress[] = [];
		const result = await backend.runSelfTest((p) => void progress.push(p));
		if (!result.ok) throw new Error(result.error.message);
		const report = result.value;
		expect(structuredClone(report)).toEqual(report);
		expect(progress.map((p) => [p.done, p.total, p.result.name])).toEqual(
			cases.map((c, i) => [i + 1, cases.length, c.name])
		);
		const byName = Object.fromEntries(report.results.map((r) => [r.name, r]));
		expect(byName[RMSNORM_SELFTEST[0].name].pass).toBe(true);
		expect(byName[RMSNORM_SELFTEST[0].name].comparisons.length).toBeGreaterThan(0);
		expect(byName.close).toMatchObject({ pass: true, index: 1 });
		expect(byName.close.maxAbsErr).toBeCloseTo(1e-7, 12);
		expect(byName.wrong).toMatchObject({ pass: false, maxAbsErr: 0.5 });
		expect(byName.wrong.message).toMatch(/^dx: 1 of 2 elements not close/);
		expect(byName.throws).toMatchObject({ pass: false, message: 'threw kernel exploded' });
		expect(byName.throws.maxAbsErr).toBeNaN();
		expect(byName.empty).toMatchObject({ pass: false, message: 'the case compared nothing' });
		expect(byName.invalid.pass).toBe(false);
		expect(byName.invalid.message).toMatch(/^WebGPU validation error/);
		expect(report.passed).toBe(2);
		expect(report.failed).toBe(4);
		for (const r of report.results) expect(r.ms).toBeGreaterThanOrEqual(0);
	});

	it('turns a device loss into an event and an error, not a hang', async () => {
		let lose = (): Promise<void> => Promise.resolve();
		const cases: KernelCase[] = [
			fake('loses the device', async () => {
				await lose();
				return new Promise(() => {}); // waits on a device that will never answer
			}),
			fake('after the loss', async () => [{ label: 'y', actual: [0], expected: [0], ...TOL }])
		];
		const backend = createBackend({ acquire, cases });
		lose = () => backend.simulateDeviceLoss();
		const events: BackendEvent[] = [];
		await backend.subscribe((e) => void events.push(e));
		const progress: SelfTestProgress[] = [];
		const result = await backend.runSelfTest((p) => void progress.push(p));
		expect(result.ok).toBe(false);
		if (!result.ok) {
			expect(result.error.kind).toBe('device-lost');
			expect(result.error.message).toMatch(/lost/);
		}
		// The run stops at the loss; the lost case is reported as failed.
		expect(progress.map((p) => [p.result.name, p.result.pass])).toEqual([
			['loses the device', false]
		]);
		await new Promise((r) => setTimeout(r, 0));
		expect(events).toEqual([
			{ type: 'device-lost', error: expect.objectContaining({ kind: 'device-lost' }) }
		]);
		// The next call acquires a fresh device.
		const probe = await backend.probe();
		expect(probe.ok).toBe(true);
	});
});
