/**
 * @file A small seeded generator (mulberry32) on the host: reproducible test inputs,
 * the environments' opponents and game sets, LoRA init. Its sequences are fixed:
 * tests and committed results depend on them. Not the sampling RNG of the GPU (that
 * one lives in the sampling kernels).
 */

export class Rng {
	#state: number;
	constructor(seed: number) {
		this.#state = seed >>> 0 || 0x9e3779b9;
	}
	/** Uniform in [0, 1). */
	next(): number {
		let t = (this.#state = (this.#state + 0x6d2b79f5) >>> 0);
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	}
	/** Standard normal (Box-Muller). */
	normal(): number {
		const u = 1 - this.next();
		return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * this.next());
	}
	/** Integer in [0, n). */
	int(n: number): number {
		return Math.floor(this.next() * n);
	}
	/** `n` values uniform in [lo, hi). */
	uniform(n: number, lo = -1, hi = 1): Float32Array {
		const out = new Float32Array(n);
		for (let i = 0; i < n; i++) out[i] = lo + (hi - lo) * this.next();
		return out;
	}
	/** `n` values from N(0, std^2). */
	normals(n: number, std = 1): Float32Array {
		const out = new Float32Array(n);
		for (let i = 0; i < n; i++) out[i] = std * this.normal();
		return out;
	}
	/** `n` integers in [0, bound). */
	ints(n: number, bound: number): Uint32Array {
		const out = new Uint32Array(n);
		for (let i = 0; i < n; i++) out[i] = this.int(bound);
		return out;
	}
}

/** A copy of `items` in a seeded random order (Fisher-Yates over Rng(seed)). */
export function shuffled<T>(items: readonly T[], seed: number): T[] {
	const out = [...items];
	const rng = new Rng(seed);
	for (let i = out.length - 1; i > 0; i--) {
		const j = rng.int(i + 1);
		[out[i], out[j]] = [out[j], out[i]];
	}
	return out;
}
