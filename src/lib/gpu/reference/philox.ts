/**
 * @file Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11),
 * the counter-based generator the sampling kernel uses, on the host: 4 u32 outputs from a
 * 128-bit counter and a 64-bit key, no state. Written for clarity; checked against the
 * paper's known-answer vectors.
 */

const M0 = 0xd2511f53; // round multipliers, from the paper
const M1 = 0xcd9e8d57;
const W0 = 0x9e3779b9; // key schedule increments (golden ratio, sqrt(3) - 1)
const W1 = 0xbb67ae85;

/** [hi, lo] of the 64-bit product a * b of two u32. */
export function mulhilo32(a: number, b: number): [number, number] {
	const product = BigInt(a >>> 0) * BigInt(b >>> 0);
	return [Number(product >> 32n), Number(product & 0xffffffffn)];
}

export function philox4x32(
	counter: readonly [number, number, number, number],
	key: readonly [number, number]
): [number, number, number, number] {
	let [c0, c1, c2, c3] = counter.map((x) => x >>> 0);
	let [k0, k1] = key.map((x) => x >>> 0);
	for (let round = 0; round < 10; round++) {
		if (round > 0) {
			k0 = (k0 + W0) >>> 0;
			k1 = (k1 + W1) >>> 0;
		}
		const [hi0, lo0] = mulhilo32(M0, c0);
		const [hi1, lo1] = mulhilo32(M1, c2);
		[c0, c1, c2, c3] = [(hi1 ^ c1 ^ k0) >>> 0, lo1, (hi0 ^ c3 ^ k1) >>> 0, lo0];
	}
	return [c0, c1, c2, c3];
}
