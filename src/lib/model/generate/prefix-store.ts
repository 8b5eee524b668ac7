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
import type { RowSpan } from '../../gpu/kernels/copy';
import type { BufferPool } from '../../gpu/pool';
import { copyCacheRows, KvCache } from '../transformer/kv-cache';
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
		readonly gpu: Gpu,
		readonly pool: BufferPool,
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

	/** Copies every entry of the smaller store `from` into the same entry here, least
	 * recently used first (so they keep their order of use); queued. */
	takeEntries(from: PrefixStore): Promise<void> {
		const spans: RowSpan[] = [];
		const entries = [...from.#tokens.keys()].filter((e) => from.#tokens[e]);
		entries.sort((a, b) => from.#used[a] - from.#used[b]);
		for (const entry of entries) {
			const tokens = from.#tokens[entry]!;
			this.record(entry, tokens);
			spans.push({ src: entry * from.S, dst: entry * this.S, rows: tokens.length });
		}
		return copyCacheRows(this.gpu, this.pool, from.cache, this.cache, spans);
	}

	/** Copies each hit's rows into row b of `cache` (a decode session's, [B, S']); queued
	 * ahead of the prefills, which write the other slots of those rows. */
	restore(cache: KvCache, hits: readonly (PrefixHit | undefined)[]): Promise<void> {
		const spans: RowSpan[] = [];
		hits.forEach((hit, b) => {
			if (hit) spans.push({ src: hit.entry * this.S, dst: b * cache.S, rows: hit.length });
		});
		return copyCacheRows(this.gpu, this.pool, this.cache, cache, spans);
	}

	/**
	 * Stores sequence b (its tokens whose keys and values row b of `cache` holds) in the entry
	 * its prompt came from (hits[b]), else the least recently used one; queued ahead of
	 * whatever next overwrites those rows.
	 */
	keep(
		cache: KvCache,
		sequences: readonly (readonly number[])[],
		hits: readonly (PrefixHit | undefined)[]
	): Promise<void> {
		const taken = new Set<number>();
		const spans: RowSpan[] = [];
		sequences.forEach((tokens, b) => {
			if (tokens.length < PREFIX_BLOCK) return;
			const entry = this.claim(taken, hits[b]?.entry);
			if (entry === undefined) return;
			taken.add(entry);
			this.record(entry, tokens);
			spans.push({ src: b * cache.S, dst: entry * this.S, rows: Math.min(tokens.length, this.S) });
		});
		return copyCacheRows(this.gpu, this.pool, cache, this.cache, spans);
	}

	release(): void {
		this.cache.release();
	}
}
