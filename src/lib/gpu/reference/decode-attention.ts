/**
 * @file CPU reference for decode attention, written for clarity, in f64: sequence b's
 * single query (one per head) against keys 0..min(positions[b], S - 1) of its own cache,
 * with a plain softmax over the whole row. Query head h reads kv head floor(h / (Hq / Hkv)).
 * Layouts: q, out [B, Hq, D]; k, v [B, S, Hkv, D]. With `sequences` [R], q and out have R
 * rows and row r reads cache row sequences[r] at positions[r].
 */

export interface DecodeAttentionDims {
	B: number;
	S: number;
	Hq: number;
	Hkv: number;
	D: number;
}

export function decodeAttentionRef(
	q: ArrayLike<number>,
	k: ArrayLike<number>,
	v: ArrayLike<number>,
	positions: ArrayLike<number>,
	{ B, S, Hq, Hkv, D }: DecodeAttentionDims,
	scale = 1 / Math.sqrt(D),
	sequences?: ArrayLike<number>
): Float64Array {
	const R = sequences ? sequences.length : B;
	const out = new Float64Array(R * Hq * D);
	const group = Hq / Hkv;
	for (let b = 0; b < R; b++) {
		const cb = sequences ? sequences[b] : b;
		const n = Math.min(positions[b] + 1, S);
		for (let h = 0; h < Hq; h++) {
			const g = Math.floor(h / group);
			const qi = (b * Hq + h) * D;
			const kAt = (j: number) => ((cb * S + j) * Hkv + g) * D;
			const scores = new Float64Array(n);
			let max = -Infinity;
			for (let j = 0; j < n; j++) {
				let s = 0;
				for (let d = 0; d < D; d++) s += q[qi + d] * k[kAt(j) + d];
				scores[j] = scale * s;
				max = Math.max(max, scores[j]);
			}
			let sum = 0;
			for (let j = 0; j < n; j++) sum += Math.exp(scores[j] - max);
			for (let j = 0; j < n; j++) {
				const p = Math.exp(scores[j] - max) / sum;
				for (let d = 0; d < D; d++) out[qi + d] += p * v[kAt(j) + d];
			}
		}
	}
	return out;
}
