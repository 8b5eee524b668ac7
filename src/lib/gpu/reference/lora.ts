/**
 * @file CPU reference for a LoRA adapter on a frozen linear layer, written for clarity, in
 * f64: y = x W^T (frozen, not here) + scale * (x A^T) B^T, with A [r, in], B [out, r] and
 * scale = alpha / r. Matrices are row-major.
 */

/**
 * out [rows, cols] = op(a) @ op(b), op(a) [rows, k], op(b) [k, cols]; `aT` means a is stored
 * as [k, rows], `bT` that b is stored as [cols, k].
 */
function matmul(
	a: ArrayLike<number>,
	b: ArrayLike<number>,
	rows: number,
	k: number,
	cols: number,
	{ aT = false, bT = false } = {}
) {
	const out = new Float64Array(rows * cols);
	for (let i = 0; i < rows; i++)
		for (let j = 0; j < cols; j++) {
			let s = 0;
			for (let t = 0; t < k; t++)
				s += (aT ? a[t * rows + i] : a[i * k + t]) * (bT ? b[j * k + t] : b[t * cols + j]);
			out[i * cols + j] = s;
		}
	return out;
}

export interface LoraDims {
	/** Rows of x (tokens). */
	n: number;
	inFeatures: number;
	outFeatures: number;
	rank: number;
}

/** xa = x A^T [N, r] and the adapter's output delta = scale * xa B^T [N, out]. */
export function loraForwardRef(
	x: ArrayLike<number>,
	a: ArrayLike<number>,
	b: ArrayLike<number>,
	scale: number,
	{ n, inFeatures, outFeatures, rank }: LoraDims
) {
	const xa = matmul(x, a, n, inFeatures, rank, { bT: true });
	const delta = matmul(xa, b, n, rank, outFeatures, { bT: true }).map((v) => scale * v);
	return { xa, delta };
}

/** Gradients of sum(dy * y) with respect to A, B and x (the adapter's share of dx). */
export function loraBackwardRef(
	x: ArrayLike<number>,
	a: ArrayLike<number>,
	b: ArrayLike<number>,
	scale: number,
	dy: ArrayLike<number>,
	dims: LoraDims
) {
	const { n, inFeatures, outFeatures, rank } = dims;
	const { xa } = loraForwardRef(x, a, b, scale, dims);
	const dB = matmul(dy, xa, outFeatures, n, rank, { aT: true }).map((v) => scale * v); // [out, r]
	const dxa = matmul(dy, b, n, outFeatures, rank).map((v) => scale * v); // [N, r]
	const dA = matmul(dxa, x, rank, n, inFeatures, { aT: true }); // [r, in]
	const dx = matmul(dxa, a, n, rank, inFeatures); // [N, in]
	return { dA, dB, dx };
}
