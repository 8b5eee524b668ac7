/**
 * @file `copyColumns`: dst[r, offset + c] = src[r, c] (see copy.wgsl.ts). src [R, n] and
 * dst [R, m] f32 (leading dims flattened into R), offset + n <= m, distinct buffers.
 * `copyRowSpans`: a list of row blocks of width W moved from src to dst in one dispatch,
 * the list on the GPU as `uploadRowSpans` checked and wrote it; `copyRowSpansWithin` the
 * same inside one buffer (no destination row a source row: `uploadRowSpansWithin`). `sumRowSpans`: dst's block
 * g of R rows = the sum of R-row blocks of src at group g's member rows (`uploadSumGroups`).
 */
import { assertShape, OverLimitError } from '../errors';
import type { Gpu } from '../device';
import { Params, type Recorder } from '../kernel';
import { uploadTensor, type Tensor } from '../tensor';
import {
	COPY_COLUMNS,
	COPY_ROW_SPANS,
	COPY_ROW_SPANS_WITHIN,
	COPY_WG,
	SUM_ROW_SPANS
} from './copy.wgsl';

const KERNEL = { name: 'copy.columns', code: COPY_COLUMNS };
const ROW_SPANS = { name: 'copy.row-spans', code: COPY_ROW_SPANS };
const SUM_SPANS = { name: 'copy.sum-row-spans', code: SUM_ROW_SPANS };
const SPANS_WITHIN = { name: 'copy.row-spans-within', code: COPY_ROW_SPANS_WITHIN };

export interface CopyColumnsArgs {
	/** [R, n], f32. */
	src: Tensor;
	/** [R, m], f32, written at columns offset..offset+n-1. */
	dst: Tensor;
	/** First destination column. */
	offset: number;
}

export function copyColumns(rec: Recorder, args: CopyColumnsArgs): void {
	const { src, dst, offset } = args;
	const n = src.shape[src.shape.length - 1] ?? 0;
	const m = dst.shape[dst.shape.length - 1] ?? 0;
	const rows = n > 0 ? src.size / n : 0;
	assertShape(
		src.dtype === 'f32' &&
			dst.dtype === 'f32' &&
			src.shape.length >= 2 &&
			dst.shape.length >= 2 &&
			m > 0 &&
			dst.size / m === rows &&
			Number.isInteger(offset) &&
			offset >= 0 &&
			offset + n <= m &&
			src.buffer !== dst.buffer,
		() =>
			`copy columns: src [R, n] must fit dst [R, m] at column ${offset} (distinct f32 ` +
			`buffers); got src ${src.dtype} [${src.shape}], dst ${dst.dtype} [${dst.shape}]`
	);
	if (dst.size >= 2 ** 32 - COPY_WG)
		throw new OverLimitError(`copy columns: [${dst.shape}] exceeds a u32 index`);
	if (src.size === 0) return;
	rec.dispatch(
		KERNEL,
		[src, dst],
		Math.ceil(src.size / COPY_WG),
		new Params().u32(rows).u32(n).u32(m).u32(offset)
	);
}

/** One block of rows: `rows` rows from src row `src` on to dst row `dst` on. */
export interface RowSpan {
	src: number;
	dst: number;
	rows: number;
}

/** A span list on the GPU (u32 [G, 3]), checked against the row counts it was made for. */
export interface RowSpans {
	tensor: Tensor;
	/** Rows of the longest span (the dispatch's extent per span). */
	maxRows: number;
	srcRows: number;
	dstRows: number;
}

/** Checks each span lies inside src [srcRows, W] and dst [dstRows, W], and uploads the list;
 * the caller releases `tensor` once the commands that read it have run. */
export function uploadRowSpans(
	gpu: Gpu,
	spans: readonly RowSpan[],
	srcRows: number,
	dstRows: number
): RowSpans {
	const flat = new Uint32Array(3 * Math.max(1, spans.length));
	spans.forEach((s, g) => {
		const ok = (start: number, total: number) =>
			Number.isInteger(start) && start >= 0 && start + s.rows <= total;
		assertShape(
			Number.isInteger(s.rows) && s.rows >= 0 && ok(s.src, srcRows) && ok(s.dst, dstRows),
			() =>
				`copy row spans: span ${g} (${s.rows} rows from ${s.src} to ${s.dst}) is outside ` +
				`src [${srcRows}] or dst [${dstRows}] rows`
		);
		flat.set([s.src, s.dst, s.rows], 3 * g);
	});
	const maxRows = spans.reduce((m, s) => Math.max(m, s.rows), 0);
	const tensor = uploadTensor(gpu, flat, [flat.length / 3, 3], 'u32');
	return { tensor, maxRows, srcRows, dstRows };
}

/** dst rows of each span = its src rows; src and dst f32 of `width` columns, the rows
 * counts the spans were checked for, distinct buffers. */
export function copyRowSpans(
	rec: Recorder,
	args: { src: Tensor; dst: Tensor; width: number; spans: RowSpans }
): void {
	const { src, dst, width: W, spans } = args;
	assertShape(
		src.dtype === 'f32' &&
			dst.dtype === 'f32' &&
			Number.isInteger(W) &&
			W > 0 &&
			src.size === spans.srcRows * W &&
			dst.size === spans.dstRows * W &&
			spans.tensor.dtype === 'u32' &&
			src.buffer !== dst.buffer,
		() =>
			`copy row spans: src and dst must be distinct f32 tensors of ${spans.srcRows} and ` +
			`${spans.dstRows} rows of ${W}; got src ${src.dtype} [${src.shape}], dst ` +
			`${dst.dtype} [${dst.shape}]`
	);
	const G = spans.tensor.shape[0];
	const total = G * spans.maxRows * W;
	if (total >= 2 ** 32 - COPY_WG || dst.size >= 2 ** 32)
		throw new OverLimitError(
			`copy row spans: ${G} spans of ${spans.maxRows} x ${W} exceed a u32 index`
		);
	if (total === 0) return;
	rec.dispatch(
		ROW_SPANS,
		[src, dst, spans.tensor],
		Math.ceil(total / COPY_WG),
		new Params().u32(G).u32(spans.maxRows).u32(W)
	);
}

/** Checks the spans lie inside [rows, W] and that no destination row is a source row,
 * then uploads them (for copyRowSpansWithin). */
export function uploadRowSpansWithin(gpu: Gpu, spans: readonly RowSpan[], rows: number): RowSpans {
	const source = new Uint8Array(rows);
	for (const s of spans)
		if (Number.isInteger(s.src) && s.src >= 0 && s.src + s.rows <= rows)
			source.fill(1, s.src, s.src + s.rows);
	spans.forEach((s, g) => {
		for (let r = Math.max(0, s.dst); r < Math.min(rows, s.dst + s.rows); r++)
			assertShape(
				source[r] === 0,
				() => `copy row spans within: span ${g} writes row ${r}, which a span reads`
			);
	});
	return uploadRowSpans(gpu, spans, rows, rows);
}

/** The spans' source rows copied to their destination rows inside `buffer` (f32 of `width`
 * columns, the rows the spans were checked for). */
export function copyRowSpansWithin(
	rec: Recorder,
	args: { buffer: Tensor; width: number; spans: RowSpans }
): void {
	const { buffer, width: W, spans } = args;
	assertShape(
		buffer.dtype === 'f32' &&
			Number.isInteger(W) &&
			W > 0 &&
			spans.srcRows === spans.dstRows &&
			buffer.size === spans.dstRows * W &&
			spans.tensor.dtype === 'u32',
		() =>
			`copy row spans within: the buffer must be f32 of ${spans.dstRows} rows of ${W}; got ` +
			`${buffer.dtype} [${buffer.shape}]`
	);
	const G = spans.tensor.shape[0];
	const total = G * spans.maxRows * W;
	if (total >= 2 ** 32 - COPY_WG || buffer.size >= 2 ** 32)
		throw new OverLimitError(
			`copy row spans within: ${G} spans of ${spans.maxRows} x ${W} exceed a u32 index`
		);
	if (total === 0) return;
	rec.dispatch(
		SPANS_WITHIN,
		[buffer, spans.tensor],
		Math.ceil(total / COPY_WG),
		new Params().u32(G).u32(spans.maxRows).u32(W)
	);
}

/** Groups of src row starts on the GPU (u32: G + 1 offsets, then the members), checked
 * against the rows they were made for. */
export interface SumGroups {
	tensor: Tensor;
	groups: number;
	/** Rows of each summed block. */
	rows: number;
	srcRows: number;
}

/** Checks each member's block of `rows` rows lies inside src [srcRows, W] and uploads the
 * groups; the caller releases `tensor` once the commands that read it have run. */
export function uploadSumGroups(
	gpu: Gpu,
	groups: readonly (readonly number[])[],
	rows: number,
	srcRows: number
): SumGroups {
	const G = groups.length;
	const members = groups.reduce((s, g) => s + g.length, 0);
	assertShape(
		G >= 1 && Number.isInteger(rows) && rows >= 1,
		() => `sum row spans: needs at least one group of at least one row; got ${G} of ${rows}`
	);
	const flat = new Uint32Array(G + 1 + members);
	let k = 0;
	groups.forEach((group, g) => {
		flat[g] = k;
		for (const start of group) {
			assertShape(
				Number.isInteger(start) && start >= 0 && start + rows <= srcRows,
				() =>
					`sum row spans: group ${g}'s block at row ${start} (${rows} rows) is outside ` +
					`src [${srcRows}] rows`
			);
			flat[G + 1 + k++] = start;
		}
	});
	flat[G] = k;
	const tensor = uploadTensor(gpu, flat, [flat.length], 'u32');
	return { tensor, groups: G, rows, srcRows };
}

/** dst [G * rows, W] = per group, the sum of its members' blocks of src [srcRows, W] (a
 * group without members: zeros); distinct f32 buffers. */
export function sumRowSpans(
	rec: Recorder,
	args: { src: Tensor; dst: Tensor; width: number; groups: SumGroups }
): void {
	const { src, dst, width: W, groups } = args;
	const G = groups.groups;
	assertShape(
		src.dtype === 'f32' &&
			dst.dtype === 'f32' &&
			Number.isInteger(W) &&
			W > 0 &&
			src.size === groups.srcRows * W &&
			dst.size === G * groups.rows * W &&
			groups.tensor.dtype === 'u32' &&
			src.buffer !== dst.buffer,
		() =>
			`sum row spans: src and dst must be distinct f32 tensors of ${groups.srcRows} and ` +
			`${G * groups.rows} rows of ${W}; got src ${src.dtype} [${src.shape}], dst ` +
			`${dst.dtype} [${dst.shape}]`
	);
	if (dst.size >= 2 ** 32 - COPY_WG || src.size >= 2 ** 32)
		throw new OverLimitError(`sum row spans: [${src.shape}] or [${dst.shape}] exceeds a u32 index`);
	rec.dispatch(
		SUM_SPANS,
		[src, dst, groups.tensor],
		Math.ceil(dst.size / COPY_WG),
		new Params().u32(G).u32(groups.rows).u32(W)
	);
}
