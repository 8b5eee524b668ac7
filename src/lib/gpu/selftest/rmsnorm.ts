/**
 * @file RMSNorm checked against its CPU reference. Tolerance: f32 accumulation over C
 * terms in a different order than the f64 reference; 1e-5 absolute + 1e-4 relative holds
 * for C up to a few thousand with inputs of unit scale.
 */
import type { Gpu } from '../device';
import { run } from '../kernel';
import { rmsNormBackward, rmsNormForward } from '../kernels/rmsnorm';
import { rmsNormBackwardRef, rmsNormRef } from '../reference/rmsnorm';
import { Rng } from '../../util/random';
import { createTensor, readTensor, uploadTensor } from '../tensor';
import type { KernelCase } from './types';

const TOL = { atol: 1e-5, rtol: 1e-4 };
const EPS = 1e-6;

export function rmsNormCases(sizes: { rows: number; cols: number }[]): KernelCase[] {
	return sizes.map(({ rows, cols }) => ({
		family: 'rmsnorm',
		name: `forward+backward R=${rows} C=${cols}`,
		async run(gpu: Gpu) {
			const rng = new Rng(rows * 7919 + cols);
			const xh = rng.normals(rows * cols);
			const wh = rng.uniform(cols, 0.5, 1.5);
			const dyh = rng.normals(rows * cols);
			const x = uploadTensor(gpu, xh, [rows, cols], 'f32');
			const weight = uploadTensor(gpu, wh, [cols], 'f32');
			const dy = uploadTensor(gpu, dyh, [rows, cols], 'f32');
			const y = createTensor(gpu, [rows, cols], 'f32');
			const dx = createTensor(gpu, [rows, cols], 'f32');
			const rstd = createTensor(gpu, [rows], 'f32');
			try {
				await run(gpu, (rec) => {
					rmsNormForward(rec, { x, weight, y, rstd, eps: EPS });
					rmsNormBackward(rec, { dy, x, weight, rstd, dx });
				});
				const ref = rmsNormRef(xh, wh, cols, EPS);
				return [
					{ label: 'y', actual: await readTensor(y), expected: ref.y, ...TOL },
					{ label: 'rstd', actual: await readTensor(rstd), expected: ref.rstd, ...TOL },
					{
						label: 'dx',
						actual: await readTensor(dx),
						expected: rmsNormBackwardRef(dyh, xh, wh, cols, EPS),
						...TOL
					}
				];
			} finally {
				for (const t of [x, weight, dy, y, dx, rstd]) t.release();
			}
		}
	}));
}

/** The sizes the in-browser self-test runs: one not a multiple of 256, one wide row. */
export const RMSNORM_SELFTEST = rmsNormCases([
	{ rows: 5, cols: 37 },
	{ rows: 3, cols: 576 }
]);
