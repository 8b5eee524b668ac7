/**
 * @file CPU reference for RMSNorm, written for clarity, in f64.
 */

/** x [R, C], weight [C] -> y [R, C], rstd [R]. */
export function rmsNormRef(
	x: ArrayLike<number>,
	weight: ArrayLike<number>,
	cols: number,
	eps: number
) {
	const rows = x.length / cols;
	const y = new Float64Array(x.length);
	const rstd = new Float64Array(rows);
	for (let r = 0; r < rows; r++) {
		let sumSq = 0;
		for (let c = 0; c < cols; c++) sumSq += x[r * cols + c] ** 2;
		rstd[r] = 1 / Math.sqrt(sumSq / cols + eps);
		for (let c = 0; c < cols; c++) y[r * cols + c] = x[r * cols + c] * rstd[r] * weight[c];
	}
	return { y, rstd };
}

/** dx of sum(dy * rmsnorm(x) * weight) with respect to x. */
export function rmsNormBackwardRef(
	dy: ArrayLike<number>,
	x: ArrayLike<number>,
	weight: ArrayLike<number>,
	cols: number,
	eps: number
): Float64Array {
	const { rstd } = rmsNormRef(x, weight, cols, eps);
	const dx = new Float64Array(x.length);
	for (let r = 0; r < rstd.length; r++) {
		let dot = 0; // sum_i w_i dy_i x_i
		for (let c = 0; c < cols; c++) dot += weight[c] * dy[r * cols + c] * x[r * cols + c];
		const k = rstd[r] ** 3 * (dot / cols);
		for (let c = 0; c < cols; c++) {
			const i = r * cols + c;
			dx[i] = rstd[r] * weight[c] * dy[i] - x[i] * k;
		}
	}
	return dx;
}
