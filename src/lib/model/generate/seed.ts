/**
 * @file Per-sequence sampling keys: sequence i of a call samples with the Philox key
 * sequenceSeed(seed, i) at counter = the token's index, so a call repeats exactly and a
 * sequence's draws do not depend on its batch neighbours (its logits may still differ in the
 * last bits with the batch size: the matmuls' tilings depend on the row count).
 */

/** 32-bit finaliser of MurmurHash3: a bijection that mixes every input bit into the output. */
function fmix32(h: number): number {
	h ^= h >>> 16;
	h = Math.imul(h, 0x85ebca6b);
	h ^= h >>> 13;
	h = Math.imul(h, 0xc2b2ae35);
	return (h ^ (h >>> 16)) >>> 0;
}

/** The u32 Philox key of sequence `index` of a call with `seed` (any safe integer). */
export function sequenceSeed(seed: number, index: number): number {
	const lo = seed >>> 0;
	const hi = Math.floor(seed / 2 ** 32) >>> 0;
	return fmix32(fmix32(fmix32(lo) ^ hi) ^ Math.imul(index + 1, 0x9e3779b1));
}

/** A random u32 (crypto when the host has it): a call's seed, or one sequence's key. */
export function randomSeed(): number {
	const c = (globalThis as { crypto?: Crypto }).crypto;
	if (c?.getRandomValues) return c.getRandomValues(new Uint32Array(1))[0];
	return Math.floor(Math.random() * 2 ** 32);
}
