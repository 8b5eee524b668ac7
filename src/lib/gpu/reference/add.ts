/**
 * @file CPU reference for the elementwise adds, written for clarity, in f64.
 */

/** y + alpha * x. */
export function addRef(y: ArrayLike<number>, x: ArrayLike<number>, alpha = 1): Float64Array {
	const out = new Float64Array(y.length);
	for (let k = 0; k < y.length; k++) out[k] = y[k] + alpha * x[k];
	return out;
}

/** y [R, C] + bias [C] on every row. */
export function addBiasRef(y: ArrayLike<number>, bias: ArrayLike<number>): Float64Array {
	const cols = bias.length;
	const out = new Float64Array(y.length);
	for (let k = 0; k < y.length; k++) out[k] = y[k] + bias[k % cols];
	return out;
}
