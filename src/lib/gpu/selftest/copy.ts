/**
 * @file The column-block and row-span copies checked against their CPU references.
 * Tolerance: exact (atol 0, rtol 0): the kernels only move values. The sums of row blocks:
 * f32 sums in member order against f64 ones, atol 1e-6 x members, rtol 1e-6.
 */
import type { Gpu } from '../device';
import { run } from '../kernel';
import {
	copyColumns,
	copyRowSpans,
	copyRowSpansWithin,
	sumRowSpans,
	uploadRowSpans,
	uploadRowSpansWithin,
	uploadSumGroups,
	type RowSpan
} from '../kernels/copy';
import { copyColumnsRef, copyRowSpansRef, sumRowSpansRef } from '../reference/copy';
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

/** Spans inside one buffer of `rows` rows (no destination row a source row). */
export function rowSpanWithinCases(
	specs: { rows: number; width: number; spans: RowSpan[] }[]
): KernelCase[] {
	return specs.map((spec) => ({
		family: 'copy',
		name: `row spans within [${spec.rows}, ${spec.width}], ${spec.spans.length} spans`,
		run: async (gpu: Gpu) => {
			const { rows, width, spans } = spec;
			const host = new Rng(rows * 11 + width).normals(rows * width);
			const buffer = uploadTensor(gpu, host, [rows, width], 'f32');
			const list = uploadRowSpansWithin(gpu, spans, rows);
			try {
				await run(gpu, (rec) => copyRowSpansWithin(rec, { buffer, width, spans: list }));
				return [
					{
						label: 'buffer',
						actual: await readTensor(buffer),
						expected: copyRowSpansRef(host, host, width, spans),
						atol: 0,
						rtol: 0
					}
				];
			} finally {
				buffer.release();
				list.tensor.release();
			}
		}
	}));
}

export interface SumSpanCaseSpec {
	srcRows: number;
	width: number;
	/** Rows of each summed block. */
	rows: number;
	/** Each group's members' first src rows. */
	groups: number[][];
}

export function sumSpanCases(specs: SumSpanCaseSpec[]): KernelCase[] {
	return specs.map((spec) => ({
		family: 'copy',
		name:
			`sum row spans [${spec.srcRows}, ${spec.width}] -> ${spec.groups.length} x ` +
			`[${spec.rows}, ${spec.width}] from ${spec.groups.reduce((s, g) => s + g.length, 0)} blocks`,
		run: (gpu: Gpu) => runSums(gpu, spec)
	}));
}

async function runSums(gpu: Gpu, spec: SumSpanCaseSpec): Promise<Comparison[]> {
	const { srcRows, width, rows, groups } = spec;
	const rng = new Rng(srcRows * 7 + width * 3 + rows);
	const srcHost = rng.normals(srcRows * width);
	const owned: Tensor[] = [];
	try {
		const src = uploadTensor(gpu, srcHost, [srcRows, width], 'f32');
		// stale values in dst: every element must be written
		const dst = uploadTensor(
			gpu,
			rng.normals(groups.length * rows * width),
			[groups.length * rows, width],
			'f32'
		);
		const sums = uploadSumGroups(gpu, groups, rows, srcRows);
		owned.push(src, dst, sums.tensor);
		await run(gpu, (rec) => sumRowSpans(rec, { src, dst, width, groups: sums }));
		const most = Math.max(1, ...groups.map((g) => g.length));
		return [
			{
				label: 'dst',
				actual: await readTensor(dst),
				expected: sumRowSpansRef(srcHost, width, rows, groups),
				atol: 1e-6 * most,
				rtol: 1e-6
			}
		];
	} finally {
		for (const t of owned) t.release();
	}
}

/** The self-test's sizes: the middle chunk of a vocabulary of 3 chunks; three prompts of a
 * prefill group (padded to 5) into sequences 1..3 of a cache of 4 x 6 slots, Qwen2.5-0.5B's
 * kv row (2 x 64); two prefixes of 5 rows summed over the 3 and 2 sequences (of 9 rows)
 * that continue them, SmolLM2-135M's kv row (3 x 64); a cache's prefix rows copied to two
 * other sequences inside one buffer. */
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
	]),
	...sumSpanCases([
		{
			srcRows: 45,
			width: 192,
			rows: 5,
			groups: [
				[0, 18, 36],
				[9, 27]
			]
		}
	]),
	// a prefix of 7 slots in sequence 0's cache rows into sequences 1 and 3 (of 4 x 12 slots)
	...rowSpanWithinCases([
		{
			rows: 48,
			width: 128,
			spans: [
				{ src: 0, dst: 12, rows: 7 },
				{ src: 0, dst: 36, rows: 7 }
			]
		}
	])
];
