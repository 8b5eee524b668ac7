/**
 * @file CPU reference for the KV-cache kernels, written for clarity.
 */

export interface KvCacheDims {
	B: number;
	/** Slots per sequence. */
	S: number;
	/** Floats per slot: Hkv * D. */
	W: number;
}

/** The cache [B, S, W] after writing rows [B, W] at slots positions[b] (slots >= S skipped). */
export function kvCacheAppendRef(
	cache: ArrayLike<number>,
	rows: ArrayLike<number>,
	positions: ArrayLike<number>,
	{ B, S, W }: KvCacheDims
): Float64Array {
	const out = Float64Array.from(cache);
	for (let b = 0; b < B; b++) {
		const pos = positions[b];
		if (pos >= S) continue;
		for (let i = 0; i < W; i++) out[(b * S + pos) * W + i] = rows[b * W + i];
	}
	return out;
}

/** positions + 1 (u32 wrap-around, as the kernel's addition). */
export function advancePositionsRef(positions: ArrayLike<number>): Float64Array {
	return Float64Array.from(positions, (p) => (p + 1) % 2 ** 32);
}
