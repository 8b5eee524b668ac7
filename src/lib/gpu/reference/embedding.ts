/**
 * @file CPU reference for the embedding lookup and its gradient, written for clarity, in
 * f64. Ids outside [0, V) give zero rows and no gradient, as the kernels do.
 */

/** weight [V, C], ids [N] -> out [N, C]. */
export function embeddingRef(
	weight: ArrayLike<number>,
	ids: ArrayLike<number>,
	vocab: number,
	cols: number
): Float64Array {
	const out = new Float64Array(ids.length * cols);
	for (let t = 0; t < ids.length; t++) {
		if (ids[t] >= vocab) continue;
		for (let c = 0; c < cols; c++) out[t * cols + c] = weight[ids[t] * cols + c];
	}
	return out;
}

/** dWeight [V, C] (initial values) + the scatter-add of dy [N, C] into rows ids[t]. */
export function embeddingBackwardRef(
	dWeight: ArrayLike<number>,
	ids: ArrayLike<number>,
	dy: ArrayLike<number>,
	vocab: number,
	cols: number
): Float64Array {
	const dw = Float64Array.from(dWeight);
	for (let t = 0; t < ids.length; t++) {
		if (ids[t] >= vocab) continue;
		for (let c = 0; c < cols; c++) dw[ids[t] * cols + c] += dy[t * cols + c];
	}
	return dw;
}
