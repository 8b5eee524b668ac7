/**
 * @file The shape of a kernel check, shared by vitest (Node, Dawn) and the in-browser
 * self-test (Web Worker): a case runs a kernel on seeded random inputs and returns what
 * it computed beside what the plain CPU reference computed, with the tolerance that applies.
 */
import type { Gpu } from '../device';
import type { Tolerance } from '../reference/allclose';

export interface Comparison extends Tolerance {
	/** What is compared, e.g. 'dx' or 'out'. */
	label: string;
	actual: ArrayLike<number>;
	expected: ArrayLike<number>;
}

export interface KernelCase {
	/** The op family, e.g. 'rmsnorm'. */
	family: string;
	/** The case, with its sizes, e.g. 'backward T=37 C=96'. */
	name: string;
	run(gpu: Gpu): Promise<Comparison[]>;
}
