/**
 * @file CPU reference for the log-softmax of chosen tokens over a vocabulary, written for
 * clarity, in f64: the whole [N, V] logits at once (the GPU version never holds them).
 */

export interface LogSoftmaxRefResult {
	/** log p(target) per token [N]. */
	logprobs: Float64Array;
	/** logsumexp of the (temperature-scaled) logits per token [N]. */
	lse: Float64Array;
	/** Entropy -sum p log p of the softmax per token [N]. */
	entropy: Float64Array;
}

/** z = h W^T / T: h [N, C], weight [V, C] -> [N, V]. */
export function logitsRef(
	h: ArrayLike<number>,
	weight: ArrayLike<number>,
	n: number,
	c: number,
	v: number,
	temperature = 1
): Float64Array {
	const z = new Float64Array(n * v);
	for (let t = 0; t < n; t++) {
		for (let j = 0; j < v; j++) {
			let dot = 0;
			for (let k = 0; k < c; k++) dot += h[t * c + k] * weight[j * c + k];
			z[t * v + j] = dot / temperature;
		}
	}
	return z;
}

/** Full log-softmax of logits z [N, V] for each token, then the target's entry. */
export function logSoftmaxGatherRef(
	z: Float64Array,
	targets: ArrayLike<number>,
	v: number
): LogSoftmaxRefResult {
	const n = targets.length;
	const logprobs = new Float64Array(n);
	const lse = new Float64Array(n);
	const entropy = new Float64Array(n);
	for (let t = 0; t < n; t++) {
		const row = z.subarray(t * v, (t + 1) * v);
		let max = -Infinity;
		for (const x of row) max = Math.max(max, x);
		let sum = 0;
		for (const x of row) sum += Math.exp(x - max);
		lse[t] = max + Math.log(sum);
		logprobs[t] = row[targets[t]] - lse[t];
		let ent = 0;
		for (const x of row) {
			const logp = x - lse[t];
			ent -= Math.exp(logp) * logp;
		}
		entropy[t] = ent;
	}
	return { logprobs, lse, entropy };
}

/**
 * dh of L = sum_t g[t] * logprobs[t], given the logits z = h W^T / T and their lse:
 * dL/dz = g (onehot(target) - softmax(z)), so dh = (dL/dz) W / T.
 */
export function logSoftmaxGatherBackwardRef(
	z: Float64Array,
	lse: ArrayLike<number>,
	targets: ArrayLike<number>,
	g: ArrayLike<number>,
	weight: ArrayLike<number>,
	c: number,
	v: number,
	temperature = 1
): Float64Array {
	const n = targets.length;
	const dh = new Float64Array(n * c);
	for (let t = 0; t < n; t++) {
		for (let j = 0; j < v; j++) {
			const dz = g[t] * ((j === targets[t] ? 1 : 0) - Math.exp(z[t * v + j] - lse[t]));
			if (dz === 0) continue;
			for (let k = 0; k < c; k++) dh[t * c + k] += (dz * weight[j * c + k]) / temperature;
		}
	}
	return dh;
}
