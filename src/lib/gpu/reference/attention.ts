/**
 * @file CPU reference for causal grouped-query attention with a padding mask, in f64:
 * every score, a full-row softmax, a hand-derived backward, so the kernels' online softmax
 * is checked against plain math. q, out [B, T, Hq, D], k, v [B, Tk, Hkv, D], lse [B, Hq, T];
 * query t sits at qOffset + t, sees keys 0..qOffset + t below lengths[b]; a query past
 * lengths[b] is padding (zeros). Head h reads kv head floor(h / (Hq / Hkv)).
 */

export interface AttentionDims {
	B: number;
	/** Query rows per sequence. */
	T: number;
	/** Key rows per sequence (>= qOffset + T). */
	Tk: number;
	Hq: number;
	Hkv: number;
	D: number;
}

export interface AttentionOptions {
	/** Multiplies q.k; defaults to 1 / sqrt(D). */
	scale?: number;
	/** Position of query row 0 (keys before it come from a KV cache). */
	qOffset?: number;
}

interface Index {
	q(b: number, t: number, h: number): number;
	k(b: number, j: number, g: number): number;
	lse(b: number, h: number, t: number): number;
}

function indexer({ T, Tk, Hq, Hkv, D }: AttentionDims): Index {
	return {
		q: (b, t, h) => ((b * T + t) * Hq + h) * D,
		k: (b, j, g) => ((b * Tk + j) * Hkv + g) * D,
		lse: (b, h, t) => (b * Hq + h) * T + t
	};
}

function dot(a: ArrayLike<number>, ai: number, b: ArrayLike<number>, bi: number, n: number) {
	let s = 0;
	for (let d = 0; d < n; d++) s += a[ai + d] * b[bi + d];
	return s;
}

/** How many keys query row t of batch b sees: 0 for a padding row. */
function visibleKeys(t: number, length: number, qOffset: number): number {
	const pos = qOffset + t;
	return pos < length ? Math.min(pos + 1, length) : 0;
}

/** Softmax probabilities of one query row over its visible keys, and their logsumexp. */
function rowProbs(
	q: ArrayLike<number>,
	k: ArrayLike<number>,
	qi: number,
	keyAt: (j: number) => number,
	n: number,
	D: number,
	scale: number
): { p: Float64Array; lse: number } {
	const s = new Float64Array(n);
	let max = -Infinity;
	for (let j = 0; j < n; j++) {
		s[j] = scale * dot(q, qi, k, keyAt(j), D);
		max = Math.max(max, s[j]);
	}
	let sum = 0;
	for (let j = 0; j < n; j++) sum += Math.exp(s[j] - max);
	const p = new Float64Array(n);
	for (let j = 0; j < n; j++) p[j] = Math.exp(s[j] - max) / sum;
	return { p, lse: max + Math.log(sum) };
}

/** out = softmax(scale * q k^T + mask) v, and the per-row logsumexp of the scores. */
export function attentionRef(
	q: ArrayLike<number>,
	k: ArrayLike<number>,
	v: ArrayLike<number>,
	lengths: ArrayLike<number>,
	dims: AttentionDims,
	options: AttentionOptions = {}
): { out: Float64Array; lse: Float64Array } {
	const { B, T, Hq, Hkv, D } = dims;
	const scale = options.scale ?? 1 / Math.sqrt(D);
	const qOffset = options.qOffset ?? 0;
	const at = indexer(dims);
	const out = new Float64Array(B * T * Hq * D);
	const lse = new Float64Array(B * Hq * T);
	for (let b = 0; b < B; b++) {
		for (let h = 0; h < Hq; h++) {
			const g = Math.floor(h / (Hq / Hkv));
			for (let t = 0; t < T; t++) {
				const n = visibleKeys(t, lengths[b], qOffset);
				if (n === 0) continue; // padding row: out and lse stay 0
				const qi = at.q(b, t, h);
				const row = rowProbs(q, k, qi, (j) => at.k(b, j, g), n, D, scale);
				lse[at.lse(b, h, t)] = row.lse;
				for (let j = 0; j < n; j++) {
					const vj = at.k(b, j, g);
					for (let d = 0; d < D; d++) out[qi + d] += row.p[j] * v[vj + d];
				}
			}
		}
	}
	return { out, lse };
}

/**
 * Gradients of sum(dout * out) with respect to q, k and v. With P = softmax(S),
 * dP = dout v^T, dS_j = P_j (dP_j - sum_i P_i dP_i), dq = scale dS k, dk = scale dS^T q,
 * dv = P^T dout; dk and dv sum over the query heads that share a kv head.
 */
export function attentionBackwardRef(
	q: ArrayLike<number>,
	k: ArrayLike<number>,
	v: ArrayLike<number>,
	dout: ArrayLike<number>,
	lengths: ArrayLike<number>,
	dims: AttentionDims,
	options: AttentionOptions = {}
): { dq: Float64Array; dk: Float64Array; dv: Float64Array } {
	const { B, T, Hq, Hkv, D } = dims;
	const scale = options.scale ?? 1 / Math.sqrt(D);
	const qOffset = options.qOffset ?? 0;
	const at = indexer(dims);
	const dq = new Float64Array(q.length);
	const dk = new Float64Array(k.length);
	const dv = new Float64Array(v.length);
	for (let b = 0; b < B; b++) {
		for (let h = 0; h < Hq; h++) {
			const g = Math.floor(h / (Hq / Hkv));
			for (let t = 0; t < T; t++) {
				const n = visibleKeys(t, lengths[b], qOffset);
				if (n === 0) continue;
				const qi = at.q(b, t, h);
				const { p } = rowProbs(q, k, qi, (j) => at.k(b, j, g), n, D, scale);
				const dp = new Float64Array(n);
				let pdp = 0; // sum_j P_j dP_j
				for (let j = 0; j < n; j++) {
					dp[j] = dot(dout, qi, v, at.k(b, j, g), D);
					pdp += p[j] * dp[j];
				}
				for (let j = 0; j < n; j++) {
					const kj = at.k(b, j, g);
					const ds = p[j] * (dp[j] - pdp);
					for (let d = 0; d < D; d++) {
						dq[qi + d] += scale * ds * k[kj + d];
						dk[kj + d] += scale * ds * q[qi + d];
						dv[kj + d] += p[j] * dout[qi + d];
					}
				}
			}
		}
	}
	return { dq, dk, dv };
}
