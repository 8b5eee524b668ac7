/**
 * @file The page's list of models in the browser's model cache (model/hf/model-cache.ts), as
 * Svelte 5 runes: refreshed when the page opens, after a download ends and after a delete.
 * The cache is the Cache API, read from the page itself (the worker writes the same origin's
 * cache). A delete is refused while `inUse` (a run or a load may be reading the files).
 */
import {
	deleteCachedModel,
	listCachedModels,
	type CachedModel,
	type ListableCache
} from '../model/hf/model-cache';
import { defaultModelCache } from '../model/hf/url-checkpoint';

export class CachedModels {
	/** The models cached, by name; null until first listed (or where there is no cache). */
	list = $state<CachedModel[] | null>(null);
	/** What went wrong with the last listing or delete, in words. */
	error = $state<string | null>(null);
	/** A run or a model load is going on (the page sets it): Delete waits. */
	inUse = $state(false);
	/** The prefix being deleted, if any. */
	deleting = $state<string | null>(null);

	#cache: () => Promise<ListableCache | null>;
	#generation = 0;

	constructor(cache: () => Promise<ListableCache | null> = defaultModelCache) {
		this.#cache = cache;
	}

	async refresh(): Promise<void> {
		const generation = ++this.#generation;
		try {
			const cache = await this.#cache();
			const list = cache ? await listCachedModels(cache) : null;
			if (generation !== this.#generation) return; // a later refresh wins
			this.list = list;
			this.error = null;
		} catch (error) {
			if (generation === this.#generation)
				this.error = `Could not list the cached models: ${(error as Error)?.message ?? error}`;
		}
	}

	/** Deletes one model's files (all of them, manifest included), then lists again. */
	async remove(prefix: string): Promise<void> {
		if (this.inUse || this.deleting) return;
		this.deleting = prefix;
		let failed: string | null = null;
		try {
			const cache = await this.#cache();
			if (cache) await deleteCachedModel(cache, prefix);
		} catch (error) {
			failed = `Could not delete the cached model: ${(error as Error)?.message ?? error}`;
		} finally {
			this.deleting = null;
		}
		await this.refresh();
		if (failed) this.error = failed;
	}
}
