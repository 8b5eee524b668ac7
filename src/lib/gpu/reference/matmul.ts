/**
 * @file CPU reference for matmul, written for clarity, accumulated in f64:
 * c = alpha * op(a) @ op(b) + beta * c per batch, row-major, an unbatched operand shared.
 */

export interface MatmulRefArgs {
	a: ArrayLike<number>;
	b: ArrayLike<number>;
	/** The initial c (read only when beta != 0). */
	c?: ArrayLike<number>;
	m: number;
	n: number;
	k: number;
	/** Batches of c; a and b are shared by every batch when `aBatched` / `bBatched` is false. */
	batch?: number;
	aBatched?: boolean;
	bBatched?: boolean;
	transA?: boolean;
	transB?: boolean;
	alpha?: number;
	beta?: number;
}

export function matmulRef(args: MatmulRefArgs): Float64Array {
	const { a, b, m, n, k, transA = false, transB = false, alpha = 1, beta = 0 } = args;
	const batch = args.batch ?? 1;
	const out = new Float64Array(batch * m * n);
	for (let t = 0; t < batch; t++) {
		const aBase = args.aBatched ? t * m * k : 0;
		const bBase = args.bBatched ? t * k * n : 0;
		for (let i = 0; i < m; i++) {
			for (let j = 0; j < n; j++) {
				let sum = 0;
				for (let p = 0; p < k; p++) {
					const av = transA ? a[aBase + p * m + i] : a[aBase + i * k + p];
					const bv = transB ? b[bBase + j * k + p] : b[bBase + p * n + j];
					sum += av * bv;
				}
				const idx = t * m * n + i * n + j;
				out[idx] = alpha * sum + (beta === 0 ? 0 : beta * (args.c?.[idx] ?? 0));
			}
		}
	}
	return out;
}
