/**
 * @file One Dawn device per test file (SwiftShader here, a real GPU where there is one),
 * and the loop that turns kernel cases into vitest tests.
 */
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { acquireGpu, type Gpu } from '../../src/lib/gpu/device';
import type { KernelCase } from '../../src/lib/gpu/selftest/types';

/** Acquires a device before the file's tests and destroys it after; fails a test that
 * left a WebGPU validation error behind. */
export function useGpu(): () => Gpu {
	let gpu: Gpu | undefined;
	beforeAll(async () => {
		gpu = await acquireGpu();
	});
	afterEach(() => {
		if (!gpu) return;
		const errors = gpu.validationErrors.splice(0);
		expect(errors, 'WebGPU validation errors').toEqual([]);
	});
	afterAll(() => gpu?.destroy());
	return () => {
		if (!gpu) throw new Error('GPU not acquired yet');
		return gpu;
	};
}

/** One vitest test per case; each comparison must be allclose at its stated tolerance. */
export function itRunsCases(cases: KernelCase[], gpu: () => Gpu): void {
	for (const c of cases) {
		it(`${c.family}: ${c.name}`, async () => {
			const comparisons = await c.run(gpu());
			expect(comparisons.length).toBeGreaterThan(0);
			for (const cmp of comparisons) {
				expect(cmp.actual, cmp.label).toBeAllclose(cmp.expected, cmp);
			}
		});
	}
}
