/**
 * @file CPU reference for a LoRA adapter on a frozen linear layer, written for clarity, in
 * f64: y = x W^T (frozen, not here) + scale * (x A^T) B^T, with A [r, in], B [out, r] and
 * scale = alpha / r. Matrices are row-major.
 */

/** out [rows, cols] = a [rows, k] @ b^T, b [cols, k]. */
function matmulNT(
	a: ArrayLike<number>,
	b: ArrayLike<number>,
	rows: number,
	k: number,
	cols: number
) {
	const out = new Float64Array(rows * cols);
	for (let i = 0; i < rows; i++)
		for (let j = 0; j < cols; j++) {
			let s = 0;
			for (let t = 0; t < k; t++) s += a[i * k + t] * b[j * k + t];
			out[i * cols + j] = s;
		}
	return out;
}

/** out [rows, cols] = a [rows, k] @ b, b [k, cols]. */
function matmulNN(
	a: ArrayLike<number>,
	b: ArrayLike<number>,
	rows: number,
	k: number,
	cols: number
) {
	const out = new Float64Array(rows * cols);
	for (let i = 0; i < rows; i++)
		for (let t = 0; t < k; t++) {
			const av = a[i * k + t];
			for (let j = 0; j < cols; j++) out[i * cols + j] += av * b[t * cols + j];
		}
	return out;
}

/** out [rows, cols] = a^T @ b, a [k, rows], b [k, cols]. */
function matmulTN(
	a: ArrayLike<number>,
	b: ArrayLike<number>,
	k: number,
	rows: number,
	cols: number
) {
	const out = new Float64Array(rows * cols);
	for (let t = 0; t < k; t++)
		for (let i = 0; i < rows; i++) {
			const av = a[t * rows + i];
			for (let j = 0; j < cols; j++) out[i * cols + j] += av * b[t * cols + j];
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
	const xa = matmulNT(x, a, n, inFeatures, rank);
	const delta = matmulNT(xa, b, n, rank, outFeatures).map((v) => scale * v);
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
	const dB = matmulTN(dy, xa, n, outFeatures, rank).map((v) => scale * v); // [out, r]
	const dxa = matmulNN(dy, b, n, outFeatures, rank).map((v) => scale * v); // [N, r]
	const dA = matmulTN(dxa, x, n, rank, inFeatures); // [r, in]
	const dx = matmulNN(dxa, a, n, rank, inFeatures); // [N, in]
	return { dA, dB, dx };
}
