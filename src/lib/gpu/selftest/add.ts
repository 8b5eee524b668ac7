/**
 * @file Elementwise adds checked against their f64 CPU reference.
 * Tolerance: atol 1e-6 + rtol 1e-6. y + alpha x rounds twice in f32 (the product, then
 * the sum), each within 2^-24 of its own magnitude; with inputs from N(0, 1) (|v| < 6 in
 * practice) that is an absolute error below 2 * 6e-8 * 12 < 1e-6 even where the sum
 * cancels to near 0, which a purely relative bound would not cover.
 */
import type { Gpu } from '../device';
import { run } from '../kernel';
import { addBias, addInPlace } from '../kernels/add';
import { addBiasRef, addRef } from '../reference/add';
import { Rng } from '../../util/random';
import { readTensor, uploadTensor, type Tensor } from '../tensor';
import type { Comparison, KernelCase } from './types';

const TOL = { atol: 1e-6, rtol: 1e-6 };

export interface AddCaseSpec {
	rows: number;
	cols: number;
	alpha?: number;
}

export function addCases(specs: AddCaseSpec[]): KernelCase[] {
	return specs.map((spec) => ({
		family: 'add',
		name: `add + bias R=${spec.rows} C=${spec.cols} alpha=${spec.alpha ?? 1}`,
		run: (gpu: Gpu) => runCase(gpu, spec)
	}));
}

async function runCase(gpu: Gpu, { rows, cols, alpha = 1 }: AddCaseSpec): Promise<Comparison[]> {
	const rng = new Rng(rows * 7919 + cols * 13 + Math.round(alpha * 100));
	const n = rows * cols;
	const xHost = rng.normals(n);
	const yHost = rng.normals(n);
	const biasHost = rng.normals(cols);
	const owned: Tensor[] = [];
	try {
		const x = uploadTensor(gpu, xHost, [rows, cols], 'f32');
		const y = uploadTensor(gpu, yHost, [rows, cols], 'f32');
		const yb = uploadTensor(gpu, yHost, [rows, cols], 'f32');
		const bias = uploadTensor(gpu, biasHost, [cols], 'f32');
		owned.push(x, y, yb, bias);
		await run(gpu, (rec) => {
			addInPlace(rec, { x, y, alpha });
			addBias(rec, { bias, y: yb });
		});
		return [
			{
				label: 'y + alpha x',
				actual: await readTensor(y),
				expected: addRef(yHost, xHost, alpha),
				...TOL
			},
			{
				label: 'y + bias',
				actual: await readTensor(yb),
				expected: addBiasRef(yHost, biasHost),
				...TOL
			}
		];
	} finally {
		for (const t of owned) t.release();
	}
}

/** The self-test's sizes: not a multiple of 256. */
export const ADD_SELFTEST = addCases([{ rows: 3, cols: 37, alpha: -0.5 }]);
