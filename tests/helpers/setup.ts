/**
 * @file vitest setup: the `toBeAllclose` matcher every numeric test uses (numpy's
 * allclose semantics, see src/lib/gpu/reference/allclose.ts).
 */
import { expect } from 'vitest';
import { compareArrays, type Tolerance } from '../../src/lib/gpu/reference/allclose';

expect.extend({
	toBeAllclose(received: ArrayLike<number>, expected: ArrayLike<number>, tol: Tolerance) {
		const report = compareArrays(received, expected, tol);
		return { pass: report.pass, message: () => report.message };
	}
});

declare module 'vitest' {
	// eslint-disable-next-line @typescript-eslint/no-explicit-any -- must match vitest's declaration
	interface Matchers<T = any> {
		toBeAllclose(expected: ArrayLike<number>, tol: Tolerance): T;
	}
}
