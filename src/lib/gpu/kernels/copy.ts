/**
 * @file `copyColumns`: dst[r, offset + c] = src[r, c] (see copy.wgsl.ts). src [R, n] and
 * dst [R, m] f32 (leading dims flattened into R), offset + n <= m, distinct buffers.
 */
import { assertShape, OverLimitError } from '../errors';
import { Params, type Recorder } from '../kernel';
import type { Tensor } from '../tensor';
import { COPY_COLUMNS, COPY_WG } from './copy.wgsl';

const KERNEL = { name: 'copy.columns', code: COPY_COLUMNS };

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
