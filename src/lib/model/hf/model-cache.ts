/**
 * @file The models kept in the browser's model cache (url-checkpoint.ts's MODEL_CACHE_NAME),
 * listed and deleted one model at a time. A model is the entries under one prefix: a
 * `resolve/<rev>/` URL as the Hub serves it, or the folder of a manifest, or else a file's
 * folder. Sizes come from each entry's Content-Length (url-checkpoint writes one), a body is
 * read only where that header is missing. The cache is injectable (a browser `Cache` fits).
 */
import { MANIFEST_NAME, validManifest, type CacheLike } from './url-checkpoint';
import { withoutTrailingSlash } from '../../util/location';

/** CacheLike with the Cache API's `keys()`: the requests stored, by their URL. */
export interface ListableCache extends CacheLike {
	keys(): Promise<ReadonlyArray<{ readonly url: string }>>;
}

export interface CachedModel {
	/** The URL prefix the files sit under, ending in '/'. */
	prefix: string;
	/** 'ORG/NAME' for a resolve URL (with '@rev' when not main), else host and path. */
	name: string;
	/** The files' bytes together, the manifest included. */
	bytes: number;
	/** Cache entries under the prefix, the manifest included. */
	files: number;
	/** A load finished: its manifest is there and every file it lists as present is cached. */
	complete: boolean;
}

const RESOLVE = /^(.*?\/resolve\/[^/]+\/)/;

/** The model prefix of a key: its resolve/<rev>/ URL, the longest manifest folder, or its folder. */
function prefixOf(url: string, manifestFolders: readonly string[]): string {
	const resolve = RESOLVE.exec(url);
	if (resolve) return resolve[1];
	let best = '';
	for (const folder of manifestFolders)
		if (url.startsWith(folder) && folder.length > best.length) best = folder;
	return best || url.slice(0, url.lastIndexOf('/') + 1);
}

/** A short name for a prefix: 'HuggingFaceTB/SmolLM2-135M-Instruct', or 'host/path'. */
export function cachedModelName(prefix: string): string {
	let url: URL;
	try {
		url = new URL(prefix);
	} catch {
		return withoutTrailingSlash(prefix);
	}
	const parts = url.pathname.split('/').filter(Boolean);
	const at = parts.lastIndexOf('resolve');
	if (at >= 2) {
		const rev = decodeURIComponent(parts[at + 1] ?? 'main');
		return `${parts[at - 2]}/${parts[at - 1]}${rev === 'main' ? '' : `@${rev}`}`;
	}
	return `${url.host}/${parts.join('/')}`;
}

/** An entry's size: its Content-Length when it has one, else its body's. */
async function sizeOf(cache: ListableCache, url: string): Promise<number> {
	const res = await cache.match(url);
	if (!res) return 0;
	const len = res.headers.get('content-length');
	if (len !== null && /^\d+$/.test(len)) {
		// (not awaited: a tee'd body's cancel waits for its twin)
		void res.body?.cancel().catch(() => {});
		return Number(len);
	}
	return (await res.blob()).size;
}

/** A model's manifest: its size and whether every file it says is present is in `urls`. */
async function readManifest(
	cache: ListableCache,
	prefix: string,
	urls: ReadonlySet<string>
): Promise<{ bytes: number; complete: boolean } | undefined> {
	const res = await cache.match(prefix + MANIFEST_NAME);
	if (!res) return undefined;
	const body = await res.arrayBuffer();
	try {
		const m = validManifest(JSON.parse(new TextDecoder().decode(body)));
		const complete =
			!!m &&
			Object.entries(m.files).every(([name, present]) => !present || urls.has(prefix + name));
		return { bytes: body.byteLength, complete };
	} catch {
		return { bytes: body.byteLength, complete: false };
	}
}

/** The entries of the cache grouped by model prefix. */
async function groups(cache: ListableCache): Promise<Map<string, string[]>> {
	const urls = (await cache.keys()).map((r) => r.url);
	const manifestFolders = urls
		.filter((u) => u.endsWith(`/${MANIFEST_NAME}`))
		.map((u) => u.slice(0, -MANIFEST_NAME.length));
	const byPrefix = new Map<string, string[]>();
	for (const url of urls) {
		const prefix = prefixOf(url, manifestFolders);
		const group = byPrefix.get(prefix);
		if (group) group.push(url);
		else byPrefix.set(prefix, [url]);
	}
	return byPrefix;
}

/** Every model in the cache, by name. */
export async function listCachedModels(cache: ListableCache): Promise<CachedModel[]> {
	const models: CachedModel[] = [];
	for (const [prefix, urls] of await groups(cache)) {
		const manifest = await readManifest(cache, prefix, new Set(urls));
		let bytes = manifest?.bytes ?? 0;
		for (const url of urls) if (url !== prefix + MANIFEST_NAME) bytes += await sizeOf(cache, url);
		models.push({
			prefix,
			name: cachedModelName(prefix),
			bytes,
			files: urls.length,
			complete: manifest?.complete ?? false
		});
	}
	return models.sort((a, b) => a.name.localeCompare(b.name) || a.prefix.localeCompare(b.prefix));
}

/**
 * Deletes every entry of the model under `prefix` (the manifest first, so that a delete cut
 * short never leaves a manifest claiming files that are gone). Returns the entries deleted.
 */
export async function deleteCachedModel(cache: ListableCache, prefix: string): Promise<number> {
	const urls = (await groups(cache)).get(prefix) ?? [];
	const manifest = prefix + MANIFEST_NAME;
	const ordered = [...urls.filter((u) => u === manifest), ...urls.filter((u) => u !== manifest)];
	let deleted = 0;
	for (const url of ordered) if (await cache.delete(url)) deleted++;
	return deleted;
}
