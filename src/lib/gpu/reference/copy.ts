/**
 * @file CPU references for the column-block copy, row spans, and sums of row blocks.
 */

/** dst [R, m] with src [R, n] written at columns offset..offset+n-1. */
export function copyColumnsRef(
	src: ArrayLike<number>,
	dst: ArrayLike<number>,
	rows: number,
	offset: number
): Float64Array {
	const n = src.length / rows;
	const m = dst.length / rows;
	const out = Float64Array.from(dst);
	for (let r = 0; r < rows; r++)
		for (let c = 0; c < n; c++) out[r * m + offset + c] = src[r * n + c];
	return out;
}

/** dst [*, W] with each span's rows of src [*, W] written at its destination rows. */
export function copyRowSpansRef(
	src: ArrayLike<number>,
	dst: ArrayLike<number>,
	width: number,
	spans: readonly { src: number; dst: number; rows: number }[]
): Float64Array {
	const out = Float64Array.from(dst);
	for (const s of spans)
		for (let r = 0; r < s.rows; r++)
			for (let c = 0; c < width; c++) out[(s.dst + r) * width + c] = src[(s.src + r) * width + c];
	return out;
}

/** [G * rows, W]: per group, the sum (in f64, in member order) of its members' blocks of
 * `rows` rows of src [*, W] starting at each member's row. */
export function sumRowSpansRef(
	src: ArrayLike<number>,
	width: number,
	rows: number,
	groups: readonly (readonly number[])[]
): Float64Array {
	const out = new Float64Array(groups.length * rows * width);
	groups.forEach((group, g) => {
		for (const start of group)
			for (let i = 0; i < rows * width; i++) out[g * rows * width + i] += src[start * width + i];
	});
	return out;
}
