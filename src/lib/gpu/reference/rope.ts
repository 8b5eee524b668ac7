/**
 * @file CPU reference for rotate-half RoPE, written for clarity, in f64, except the
 * angle: it is the f32 product f32(pos) * inv_freq[i], as transformers forms it (and as
 * the kernel does), so the comparison measures the kernel's sin/cos and rotation, not
 * f32's rounding of a large angle, which transformers shares.
 */

export interface RopeRefShape {
	batch: number;
	seq: number;
	heads: number;
	dim: number;
}

/** x [B, T, H, D]; positions [B * T] or [T]; invFreq [D / 2]; sign -1 for the backward. */
export function ropeRef(
	x: ArrayLike<number>,
	positions: ArrayLike<number>,
	invFreq: ArrayLike<number>,
	{ batch, seq, heads, dim }: RopeRefShape,
	attentionScaling = 1,
	sign: 1 | -1 = 1
): Float64Array {
	const half = dim / 2;
	const y = new Float64Array(x.length);
	for (let row = 0; row < batch * seq; row++) {
		const pos = positions.length === seq ? positions[row % seq] : positions[row];
		for (let h = 0; h < heads; h++) {
			const base = (row * heads + h) * dim;
			for (let i = 0; i < half; i++) {
				const angle = Math.fround(Math.fround(pos) * invFreq[i]);
				const cos = Math.cos(angle) * attentionScaling;
				const sin = Math.sin(angle) * attentionScaling * sign;
				const x1 = x[base + i];
				const x2 = x[base + half + i];
				y[base + i] = x1 * cos - x2 * sin; // rotate_half(x)[i] = -x[i + D/2]
				y[base + half + i] = x2 * cos + x1 * sin; // rotate_half(x)[i + D/2] = x[i]
			}
		}
	}
	return y;
}
