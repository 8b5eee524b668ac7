/**
 * @file IEEE 754 binary16 <-> binary32 on the host (Node 20 has no Float16Array).
 * f32 -> f16 rounds to nearest, ties to even, as WGSL's f16 conversion does.
 */

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

export function f32ToF16Bits(value: number): number {
	f32[0] = value;
	const x = u32[0];
	const sign = (x >>> 16) & 0x8000;
	const exp = (x >>> 23) & 0xff;
	let mant = x & 0x7fffff;
	if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0); // inf / nan
	let e = exp - 127 + 15;
	if (e >= 0x1f) return sign | 0x7c00; // overflow -> inf
	if (e <= 0) {
		if (e < -10) return sign; // underflow -> signed zero
		mant |= 0x800000; // make the implicit bit explicit, then shift into a subnormal
		const shift = 14 - e;
		const half = 1 << (shift - 1);
		const rest = mant & ((1 << shift) - 1);
		let m = mant >>> shift;
		if (rest > half || (rest === half && m & 1)) m++;
		return sign | m;
	}
	const rest = mant & 0x1fff;
	let m = mant >>> 13;
	if (rest > 0x1000 || (rest === 0x1000 && m & 1)) {
		m++;
		if (m === 0x400) {
			m = 0;
			e++;
			if (e >= 0x1f) return sign | 0x7c00;
		}
	}
	return sign | (e << 10) | m;
}

export function f16BitsToF32(bits: number): number {
	const sign = bits & 0x8000 ? -1 : 1;
	const exp = (bits >>> 10) & 0x1f;
	const mant = bits & 0x3ff;
	if (exp === 0) return sign * mant * 2 ** -24;
	if (exp === 0x1f) return mant ? NaN : sign * Infinity;
	return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

/** Rounds every value to the nearest f16 (for CPU references of f16 paths). */
export function roundToF16(values: ArrayLike<number>): Float32Array {
	const out = new Float32Array(values.length);
	for (let i = 0; i < values.length; i++) out[i] = f16BitsToF32(f32ToF16Bits(values[i]));
	return out;
}
