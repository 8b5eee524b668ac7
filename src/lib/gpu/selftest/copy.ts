/**
 * @file The column-block copy checked against its CPU reference.
 * Tolerance: exact (atol 0, rtol 0): the kernel only moves values.
 */
import type { Gpu } from '../device';
import { run } from '../kernel';
import { copyColumns } from '../kernels/copy';
import { copyColumnsRef } from '../reference/copy';
import { Rng } from '../../util/random';
import { readTensor, uploadTensor, type Tensor } from '../tensor';
import type { Comparison, KernelCase } from './types';

export interface CopyCaseSpec {
	rows: number;
	/** Columns of src. */
	n: number;
	/** Columns of dst. */
	m: number;
	offset: number;
}

export function copyCases(specs: CopyCaseSpec[]): KernelCase[] {
	return specs.map((spec) => ({
		family: 'copy',
		name: `columns R=${spec.rows} [${spec.n}] -> [${spec.m}] at ${spec.offset}`,
		run: (gpu: Gpu) => runCase(gpu, spec)
	}));
}

async function runCase(gpu: Gpu, { rows, n, m, offset }: CopyCaseSpec): Promise<Comparison[]> {
	const rng = new Rng(rows * 17 + n * 5 + m + offset);
	const srcHost = rng.normals(rows * n);
	const dstHost = rng.normals(rows * m);
	const owned: Tensor[] = [];
	try {
		const src = uploadTensor(gpu, srcHost, [rows, n], 'f32');
		const dst = uploadTensor(gpu, dstHost, [rows, m], 'f32');
		owned.push(src, dst);
		await run(gpu, (rec) => copyColumns(rec, { src, dst, offset }));
		return [
			{
				label: 'dst',
				actual: await readTensor(dst),
				expected: copyColumnsRef(srcHost, dstHost, rows, offset),
				atol: 0,
				rtol: 0
			}
		];
	} finally {
		for (const t of owned) t.release();
	}
}

/** The self-test's sizes: the middle chunk of a vocabulary of 3 chunks. */
export const COPY_SELFTEST = copyCases([{ rows: 3, n: 100, m: 301, offset: 100 }]);
