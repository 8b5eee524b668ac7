/**
 * @file CPU reference for SwiGLU, written for clarity, in f64.
 */

function sigmoid(g: number): number {
	return 1 / (1 + Math.exp(-g)); // f64: exp(100) and exp(-100) are both finite
}

/** h = silu(gate) * up, elementwise; gate and up of one length. */
export function swigluRef(gate: ArrayLike<number>, up: ArrayLike<number>): Float64Array {
	const h = new Float64Array(gate.length);
	for (let k = 0; k < h.length; k++) h[k] = gate[k] * sigmoid(gate[k]) * up[k];
	return h;
}

/** Gradients of sum(dh * h): dgate = dh * up * silu'(gate), dup = dh * silu(gate). */
export function swigluBackwardRef(
	gate: ArrayLike<number>,
	up: ArrayLike<number>,
	dh: ArrayLike<number>
): { dgate: Float64Array; dup: Float64Array } {
	const dgate = new Float64Array(gate.length);
	const dup = new Float64Array(gate.length);
	for (let k = 0; k < gate.length; k++) {
		const g = gate[k];
		const s = sigmoid(g);
		const dsilu = s + g * s * (1 - s); // d/dg of g * sigmoid(g)
		dgate[k] = dh[k] * up[k] * dsilu;
		dup[k] = dh[k] * g * s;
	}
	return { dgate, dup };
}

/** Splits a fused [N, 2I] gate_up (gate columns first) into gate and up [N, I]. */
export function splitGateUp(
	gateUp: ArrayLike<number>,
	inter: number
): { gate: Float64Array; up: Float64Array } {
	const rows = gateUp.length / (2 * inter);
	const gate = new Float64Array(rows * inter);
	const up = new Float64Array(rows * inter);
	for (let n = 0; n < rows; n++) {
		for (let i = 0; i < inter; i++) {
			gate[n * inter + i] = gateUp[n * 2 * inter + i];
			up[n * inter + i] = gateUp[n * 2 * inter + inter + i];
		}
	}
	return { gate, up };
}

/** Joins gate and up [N, I] into the fused [N, 2I] layout. */
export function joinGateUp(
	gate: ArrayLike<number>,
	up: ArrayLike<number>,
	inter: number
): Float64Array {
	const rows = gate.length / inter;
	const out = new Float64Array(2 * gate.length);
	for (let n = 0; n < rows; n++) {
		for (let i = 0; i < inter; i++) {
			out[n * 2 * inter + i] = gate[n * inter + i];
			out[n * 2 * inter + inter + i] = up[n * inter + i];
		}
	}
	return out;
}
