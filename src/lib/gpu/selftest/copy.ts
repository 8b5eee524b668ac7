/**
 * @file The column-block and row-span copies checked against their CPU references.
 * Tolerance: exact (atol 0, rtol 0): the kernels only move values.
 */
import type { Gpu } from '../device';
import { run } from '../kernel';
import { copyColumns, copyRowSpans, uploadRowSpans, type RowSpan } from '../kernels/copy';
import { copyColumnsRef, copyRowSpansRef } from '../reference/copy';
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

export interface RowSpanCaseSpec {
	srcRows: number;
	dstRows: number;
	width: number;
	spans: RowSpan[];
}

export function rowSpanCases(specs: RowSpanCaseSpec[]): KernelCase[] {
	return specs.map((spec) => ({
		family: 'copy',
		name:
			`row spans [${spec.srcRows}, ${spec.width}] -> [${spec.dstRows}, ${spec.width}] ` +
			(spec.spans.length > 4
				? `${spec.spans.length} spans`
				: spec.spans.map((s) => `${s.src}->${s.dst}x${s.rows}`).join(' ')),
		run: (gpu: Gpu) => runSpans(gpu, spec)
	}));
}

async function runSpans(gpu: Gpu, spec: RowSpanCaseSpec): Promise<Comparison[]> {
	const { srcRows, dstRows, width } = spec;
	const rng = new Rng(srcRows * 13 + dstRows * 3 + width);
	const srcHost = rng.normals(srcRows * width);
	const dstHost = rng.normals(dstRows * width);
	const owned: Tensor[] = [];
	try {
		const src = uploadTensor(gpu, srcHost, [srcRows, width], 'f32');
		const dst = uploadTensor(gpu, dstHost, [dstRows, width], 'f32');
		const spans = uploadRowSpans(gpu, spec.spans, srcRows, dstRows);
		owned.push(src, dst, spans.tensor);
		await run(gpu, (rec) => copyRowSpans(rec, { src, dst, width, spans }));
		return [
			{
				label: 'dst',
				actual: await readTensor(dst),
				expected: copyRowSpansRef(srcHost, dstHost, width, spec.spans),
				atol: 0,
				rtol: 0
			}
		];
	} finally {
		for (const t of owned) t.release();
	}
}

/** The self-test's sizes: the middle chunk of a vocabulary of 3 chunks; three prompts of a
 * prefill group (padded to 5) into sequences 1..3 of a cache of 4 x 6 slots, Qwen2.5-0.5B's
 * kv row (2 x 64). */
export const COPY_SELFTEST = [
	...copyCases([{ rows: 3, n: 100, m: 301, offset: 100 }]),
	...rowSpanCases([
		{
			srcRows: 15,
			dstRows: 24,
			width: 128,
			spans: [
				{ src: 0, dst: 6, rows: 5 },
				{ src: 5, dst: 12, rows: 1 },
				{ src: 10, dst: 18, rows: 3 }
			]
		}
	])
];
