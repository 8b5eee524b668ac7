/**
 * @file CPU reference for the skinny (few-row) matmul with its fused epilogue, written for
 * clarity, in f64: per weight segment, z = x W^T + bias + scale * xa[:, off : off + r] B^T,
 * then y = z + beta * y0 at columns yOff.. of y, or (swiglu) out = silu(z_gate) * z_up.
 * Row-major throughout; W [N, K], B [N, r], x [rows, K], xa [rows, ldxa].
 */
import { swigluRef } from './swiglu';

export interface SkinnyRefSegment {
	w: ArrayLike<number>;
	n: number;
	bias?: ArrayLike<number>;
	lora?: {
		xa: ArrayLike<number>;
		ldxa: number;
		offset: number;
		b: ArrayLike<number>;
		rank: number;
		scale: number;
	};
}

/** z [rows, n] of one segment (no beta, no placement). */
export function skinnySegmentRef(
	x: ArrayLike<number>,
	rows: number,
	k: number,
	s: SkinnyRefSegment
): Float64Array {
	const z = new Float64Array(rows * s.n);
	for (let i = 0; i < rows; i++)
		for (let j = 0; j < s.n; j++) {
			let sum = 0;
			for (let t = 0; t < k; t++) sum += x[i * k + t] * s.w[j * k + t];
			if (s.bias) sum += s.bias[j];
			if (s.lora) {
				const { xa, ldxa, offset, b, rank, scale } = s.lora;
				let l = 0;
				for (let q = 0; q < rank; q++) l += xa[i * ldxa + offset + q] * b[j * rank + q];
				sum += scale * l;
			}
			z[i * s.n + j] = sum;
		}
	return z;
}

/** y [rows, ldy] after writing z of a segment at column yOff: z + beta * y0 there, y0 elsewhere. */
export function placeRef(
	y0: ArrayLike<number>,
	z: ArrayLike<number>,
	rows: number,
	n: number,
	ldy: number,
	yOff: number,
	beta: number
): Float64Array {
	const y = Float64Array.from(y0);
	for (let i = 0; i < rows; i++)
		for (let j = 0; j < n; j++) {
			const idx = i * ldy + yOff + j;
			y[idx] = z[i * n + j] + (beta === 0 ? 0 : beta * y0[idx]);
		}
	return y;
}

/** out [rows, n] = silu(gate) * up from the two segments' z. */
export function skinnySwigluRef(zGate: ArrayLike<number>, zUp: ArrayLike<number>): Float64Array {
	return swigluRef(zGate, zUp);
}
