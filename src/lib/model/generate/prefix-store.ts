/**
 * @file Finished sequences' keys and values kept on the GPU, so a later prompt that begins
 * with one (a game's next turn: the game so far, then the new message) prefills only what
 * is new. Per layer k, v [E, S, Hkv, D] f32: E entries of S slots, each entry's tokens kept
 * on the host and found by chained hashes of PREFIX_BLOCK-token blocks, then compared token
 * by token (a hash collision only shortens a match). Entries are replaced least recently
 * used first. Keys depend on the weights: the owner clears the store when they change.
 *
 * Ownership: the store owns its tensors; `release()` frees them.
 */
import type { Gpu } from '../../gpu/device';
import { Recorder } from '../../gpu/kernel';
import { copyRowSpans, uploadRowSpans, type RowSpan } from '../../gpu/kernels/copy';
import type { BufferPool } from '../../gpu/pool';
import { KvCache } from '../transformer/kv-cache';
import type { ModelConfig } from '../types';

/** Tokens per hashed block: a match is found block by block, then extended token by token. */
export const PREFIX_BLOCK = 16;

/** Chained hashes of the whole blocks of tokens[0..n): hash k covers blocks 0..k. */
function blockHashes(tokens: readonly number[], n: number): number[] {
	const out: number[] = [];
	let h = 0x811c9dc5;
	for (let k = 0; (k + 1) * PREFIX_BLOCK <= n; k++) {
		for (let t = k * PREFIX_BLOCK; t < (k + 1) * PREFIX_BLOCK; t++) {
			h = Math.imul(h ^ tokens[t], 0x01000193) >>> 0;
			h = Math.imul(h ^ (tokens[t] >>> 16), 0x01000193) >>> 0;
		}
		out.push(h);
	}
	return out;
}

function commonPrefix(a: readonly number[], b: readonly number[], max: number): number {
	const n = Math.min(a.length, b.length, max);
	let i = 0;
	while (i < n && a[i] === b[i]) i++;
	return i;
}

export interface PrefixHit {
	entry: number;
	/** Tokens of the prompt whose keys and values the entry holds. */
	length: number;
}

export class PrefixStore {
	readonly cache: KvCache;
	readonly #tokens: (readonly number[] | undefined)[];
	readonly #used: number[];
	readonly #hashes: number[][];
	/** block hash -> the entry last recorded with it */
	readonly #index = new Map<number, number>();
	#clock = 0;

	constructor(
		gpu: Gpu,
		config: ModelConfig,
		readonly E: number,
		readonly S: number
	) {
		this.cache = new KvCache(gpu, config, E, S);
		this.#tokens = new Array(E).fill(undefined);
		this.#used = new Array(E).fill(0);
		this.#hashes = Array.from({ length: E }, () => []);
	}

	get bytes(): number {
		return this.cache.bytes;
	}

	/** Entries holding tokens. */
	get size(): number {
		return this.#tokens.filter(Boolean).length;
	}

	/** The entry sharing the longest whole-block-found prefix with `prompt`, at most `max`
	 * tokens of it; undefined when no entry shares a block. */
	find(prompt: readonly number[], max: number): PrefixHit | undefined {
		const hashes = blockHashes(prompt, Math.min(prompt.length, max));
		for (let k = hashes.length - 1; k >= 0; k--) {
			const entry = this.#index.get(hashes[k]);
			if (entry === undefined) continue;
			const length = commonPrefix(prompt, this.#tokens[entry]!, max);
			if (length >= PREFIX_BLOCK) {
				this.#used[entry] = ++this.#clock;
				return { entry, length };
			}
		}
		return undefined;
	}

	/** The entry to overwrite: `prefer` when given and free of `taken`, else an empty one,
	 * else the least recently used not in `taken` (undefined when all are taken). */
	claim(taken: ReadonlySet<number>, prefer?: number): number | undefined {
		if (prefer !== undefined && !taken.has(prefer)) return prefer;
		let best: number | undefined;
		for (let e = 0; e < this.E; e++) {
			if (taken.has(e)) continue;
			if (!this.#tokens[e]) return e;
			if (best === undefined || this.#used[e] < this.#used[best]) best = e;
		}
		return best;
	}

	/** Entry e now holds the keys and values of `tokens` (its first S, the caller copies). */
	record(e: number, tokens: readonly number[]): void {
		for (const h of this.#hashes[e]) if (this.#index.get(h) === e) this.#index.delete(h);
		const kept = tokens.slice(0, this.S);
		this.#tokens[e] = kept;
		this.#used[e] = ++this.#clock;
		this.#hashes[e] = blockHashes(kept, kept.length);
		for (const h of this.#hashes[e]) this.#index.set(h, e);
	}

	/** Forgets every entry (the weights changed). */
	clear(): void {
		this.#tokens.fill(undefined);
		this.#hashes.forEach((_, e) => (this.#hashes[e] = []));
		this.#index.clear();
	}

	/** The entries with their tokens, least recently used first: recorded in this order into
	 * a bigger store, they keep their order of use. */
	entries(): { entry: number; tokens: readonly number[] }[] {
		const out: { entry: number; tokens: readonly number[] }[] = [];
		this.#tokens.forEach((tokens, entry) => tokens && out.push({ entry, tokens }));
		return out.sort((a, b) => this.#used[a.entry] - this.#used[b.entry]);
	}

	release(): void {
		this.cache.release();
	}
}

/** Copies row spans of every layer's k and v from `src` to `dst` (rows [B * S] each): one
 * submission, queued before anything recorded later (so callers need not wait); the
 * promise settles when the GPU has run it. */
export function copyCacheRows(
	gpu: Gpu,
	pool: BufferPool,
	src: KvCache,
	dst: KvCache,
	spans: readonly RowSpan[]
): Promise<void> {
	if (!spans.length) return Promise.resolve();
	const width = src.config.numKvHeads * src.config.headDim;
	const list = uploadRowSpans(gpu, spans, src.B * src.S, dst.B * dst.S);
	try {
		const rec = new Recorder(gpu, pool);
		for (let l = 0; l < src.config.numLayers; l++)
			for (const [from, to] of [
				[src.k[l], dst.k[l]],
				[src.v[l], dst.v[l]]
			])
				copyRowSpans(rec, { src: from, dst: to, width, spans: list });
		return rec.submit().finally(() => list.tensor.release());
	} catch (error) {
		list.tensor.release();
		throw error;
	}
}
