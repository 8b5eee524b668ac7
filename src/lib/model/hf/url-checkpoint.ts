/**
 * @file A model under a URL prefix (e.g. a Hub resolve/main/ URL) as a CheckpointStore,
 * every file cached so a second load makes no request. Weight headers come first by range
 * request, so a mismatch is refused before gigabytes download; a weight file whose body
 * breaks off or ends short is resumed by range request from the byte it reached (MAX_RESUMES
 * times; a resume whose ETag differs from the first answer's, or whose start cannot be read,
 * starts the file over), and is cached only when exactly its declared size arrived; a
 * manifest of present and absent files follows a complete load. `fetch` and the cache are
 * injectable (browser default: the Cache API).
 */
import { blobByteSource, type ByteSource } from './byte-source';
import {
	openCheckpoint,
	type Checkpoint,
	type CheckpointStore,
	type OpenCheckpointOptions
} from './checkpoint';
import {
	CorruptCheckpointError,
	DownloadError,
	IncompleteDownloadError,
	UnreachableError,
	ModelError
} from '../errors';
import { headerLength, parseSafetensorsHeader, type SafetensorsHeader } from './safetensors';

/** The subset of the Cache API used here (a browser `Cache` satisfies it). */
export interface CacheLike {
	match(key: string): Promise<Response | undefined>;
	put(key: string, response: Response): Promise<void>;
	delete(key: string): Promise<boolean>;
}

export type FetchLike = (url: string, init?: RequestInit) => Promise<Response>;

export interface UrlStoreOptions {
	/** Defaults to globalThis.fetch. */
	fetch?: FetchLike;
	/** Defaults to the Cache API's MODEL_CACHE_NAME where it exists; null: no cache. */
	cache?: CacheLike | null;
	/** Extra request headers (e.g. Authorization for a gated repo). */
	headers?: Record<string, string>;
	signal?: AbortSignal;
	/** Bytes asked for in the first header request (default 64 KiB). */
	headerProbeBytes?: number;
}

export const MODEL_CACHE_NAME = 'tabrl-models-v1';
/** Range requests that may continue one weight file after its body broke off. */
export const MAX_RESUMES = 4;
/** The cache key of the manifest: beside the files, never fetched. */
export const MANIFEST_NAME = '.tabrl-manifest.json';

export interface Manifest {
	version: 1;
	/** name -> whether the file exists under the prefix. */
	files: Record<string, boolean>;
}

/** A parsed manifest if it is one this version wrote (version 1, a files map), else undefined. */
export function validManifest(m: unknown): Manifest | undefined {
	const x = m as Partial<Manifest> | null;
	return x?.version === 1 && !!x.files && typeof x.files === 'object' ? (x as Manifest) : undefined;
}

/**
 * The Cache API's model cache, or null where there is none (Node, insecure origins): a
 * browser Cache, so it also lists its keys (model-cache.ts).
 */
export async function defaultModelCache(): Promise<Cache | null> {
	const caches = (globalThis as { caches?: CacheStorage }).caches;
	if (!caches) return null;
	try {
		return await caches.open(MODEL_CACHE_NAME);
	} catch {
		return null;
	}
}

/**
 * Whether a response means "no such file": a 404, or an HTML page where a model file was
 * asked for. Static hosts with a single-page-app fallback (SvelteKit's adapter-static
 * `fallback`, Netlify, GitHub Pages' 404.html) answer a missing path with the app's page and
 * status 200; no model file (JSON, Jinja, safetensors) is HTML.
 */
export function isAbsent(res: Response): boolean {
	return (
		res.status === 404 ||
		(res.ok && (res.headers.get('content-type') ?? '').toLowerCase().startsWith('text/html'))
	);
}

function statusError(url: string, res: Response): DownloadError {
	const hint =
		res.status === 401 || res.status === 403
			? ' (the repo may be gated or private: accept its license and pass an access token)'
			: '';
	return new DownloadError(url, `HTTP ${res.status} ${res.statusText}${hint}`, res.status);
}

/** The first byte a 206's Content-Range covers (`bytes START-END/TOTAL`). */
function rangeStart(res: Response): number | undefined {
	const m = res.headers.get('content-range')?.match(/^bytes\s+(\d+)-/);
	return m ? Number(m[1]) : undefined;
}

/** Total file size from a 206's Content-Range or a 200's Content-Length. */
function sizeOf(res: Response): number | undefined {
	const range = res.headers.get('content-range');
	if (res.status === 206) {
		const m = range?.match(/\/(\d+)\s*$/);
		return m ? Number(m[1]) : undefined;
	}
	// A compressed body's Content-Length is not the file's size.
	const encoding = res.headers.get('content-encoding');
	if (encoding !== null && encoding !== 'identity') return undefined;
	const len = res.headers.get('content-length');
	return len !== null && /^\d+$/.test(len) ? Number(len) : undefined;
}

export function urlStore(prefix: string, options: UrlStoreOptions = {}): CheckpointStore {
	const base = prefix.endsWith('/') ? prefix : `${prefix}/`;
	const doFetch: FetchLike = options.fetch ?? ((url, init) => fetch(url, init));
	const probe = options.headerProbeBytes ?? 65536;
	const seen: Record<string, boolean> = {};
	const blobs = new Map<string, Blob>();
	let cachePromise: Promise<CacheLike | null> | undefined;
	let manifestPromise: Promise<Manifest | undefined> | undefined;

	const cache = () =>
		(cachePromise ??=
			options.cache !== undefined ? Promise.resolve(options.cache) : defaultModelCache());
	const manifest = () =>
		(manifestPromise ??= (async () => {
			const res = await (await cache())?.match(base + MANIFEST_NAME);
			if (!res) return undefined;
			try {
				return validManifest(await res.json());
			} catch {
				return undefined;
			}
		})());
	/** True when a cached manifest says the file does not exist. */
	const knownAbsent = async (name: string) => (await manifest())?.files[name] === false;

	async function get(url: string, headers?: Record<string, string>): Promise<Response> {
		try {
			return await doFetch(url, {
				headers: { ...options.headers, ...headers },
				signal: options.signal
			});
		} catch (error) {
			if (error instanceof ModelError) throw error;
			if (options.signal?.aborted) throw new DownloadError(url, String(error));
			const navigatorOnLine = (globalThis as { navigator?: { onLine?: boolean } }).navigator
				?.onLine;
			throw new UnreachableError(url, error, navigatorOnLine === false);
		}
	}

	/** Reads a body to the end, or until `limit` bytes (then cancels the rest). */
	async function readBody(
		url: string,
		res: Response,
		onChunk: (chunk: Uint8Array<ArrayBuffer>) => void,
		limit = Infinity
	): Promise<void> {
		if (!res.body) return;
		const reader = res.body.getReader();
		let got = 0;
		try {
			for (;;) {
				const { done, value } = await reader.read();
				if (done) return;
				onChunk(value);
				got += value.length;
				if (got >= limit) {
					await reader.cancel().catch(() => {});
					return;
				}
			}
		} catch (error) {
			await reader.cancel().catch(() => {});
			if (error instanceof ModelError) throw error;
			throw new DownloadError(url, `the connection broke off (${String(error)})`);
		}
	}

	/** The first `length` bytes (or fewer if the file is shorter) and the file's size. */
	async function prefixOf(
		url: string,
		length: number
	): Promise<{ bytes: Uint8Array; size?: number } | undefined> {
		const res = await get(url, { Range: `bytes=0-${length - 1}` });
		if (isAbsent(res)) return undefined;
		if (res.status !== 200 && res.status !== 206) throw statusError(url, res);
		const chunks: Uint8Array<ArrayBuffer>[] = [];
		await readBody(url, res, (c) => chunks.push(c), length);
		const all = new Uint8Array(await new Blob(chunks).arrayBuffer());
		return { bytes: all.subarray(0, length), size: sizeOf(res) };
	}

	/**
	 * A weight file of `expected` bytes: one GET, then up to MAX_RESUMES range requests from
	 * the byte reached when a body breaks off or ends short. A 200 to a range request (no range
	 * support) starts the file over; so does a 206 of another version of the file (its ETag)
	 * or one whose Content-Range a cross-origin answer does not expose: the next try is a plain
	 * GET. No If-Range: it is not a CORS-safelisted header, and a preflight the file's CDN may
	 * refuse would lose the resume. Progress counts a byte once, so it stays monotone.
	 */
	async function downloadWeights(
		url: string,
		name: string,
		expected: number,
		onBytes: (n: number) => void
	): Promise<Blob> {
		let chunks: Uint8Array<ArrayBuffer>[] = [];
		let received = 0;
		let reported = 0;
		let etag: string | null = null;
		for (let resumes = 0; ; resumes++) {
			const resuming = received > 0;
			const res = await get(url, resuming ? { Range: `bytes=${received}-` } : undefined);
			if (!res.ok) throw statusError(url, res);
			if (res.status === 206) {
				const start = rangeStart(res);
				const tag = res.headers.get('etag');
				if (!resuming || (start !== undefined && start !== received))
					throw new DownloadError(url, `the server sent bytes from ${start}, not ${received}`);
				if (start === undefined || (etag !== null && tag !== null && tag !== etag)) {
					await res.body?.cancel().catch(() => {});
					chunks = [];
					received = 0;
					if (resumes === MAX_RESUMES) throw new IncompleteDownloadError(url, 0, expected);
					continue;
				}
			} else {
				chunks = [];
				received = 0;
				etag = res.headers.get('etag');
			}
			let broke: unknown;
			await readBody(url, res, (chunk) => {
				received += chunk.length;
				if (received > expected)
					throw new CorruptCheckpointError(
						name,
						`the server sent more than the ${expected} bytes the header declares`
					);
				chunks.push(chunk);
				if (received > reported) {
					onBytes(received - reported);
					reported = received;
				}
			}).catch((error: unknown) => {
				if (!(error instanceof DownloadError) || options.signal?.aborted) throw error;
				broke = error;
			});
			const size = sizeOf(res);
			if (size !== undefined && size !== expected)
				throw new IncompleteDownloadError(url, received, size);
			if (received === expected) return new Blob(chunks);
			if (resumes === MAX_RESUMES)
				throw broke ?? new IncompleteDownloadError(url, received, expected);
		}
	}

	async function cachePut(url: string, body: Blob): Promise<void> {
		const c = await cache();
		// A full disk (QuotaExceededError) loses the cache, not the load.
		await c
			?.put(url, new Response(body, { headers: { 'content-length': String(body.size) } }))
			.catch(() => {});
	}

	return {
		where: base,

		async readText(name) {
			const url = base + name;
			const cached = await (await cache())?.match(url);
			if (cached) {
				seen[name] = true;
				return cached.text();
			}
			if (await knownAbsent(name)) {
				seen[name] = false;
				return undefined;
			}
			const res = await get(url);
			if (isAbsent(res)) {
				seen[name] = false;
				return undefined;
			}
			if (!res.ok) throw statusError(url, res);
			const chunks: Uint8Array<ArrayBuffer>[] = [];
			await readBody(url, res, (c) => chunks.push(c));
			const blob = new Blob(chunks);
			const text = await blob.text();
			let complete = true;
			if (name.endsWith('.json'))
				try {
					JSON.parse(text);
				} catch {
					complete = false; // the parser downstream says what is wrong; not cached
				}
			if (complete) await cachePut(url, blob);
			seen[name] = true;
			return text;
		},

		async readHeader(name) {
			const url = base + name;
			const c = await cache();
			const cached = await c?.match(url);
			if (cached) {
				const blob = await cached.blob();
				const source = blobByteSource(blob);
				try {
					const first = await source.read(0, Math.min(8, blob.size));
					const n = headerLength(first, name, blob.size);
					const header = parseSafetensorsHeader(await source.read(0, 8 + n), name, blob.size);
					blobs.set(name, blob);
					seen[name] = true;
					return header;
				} catch (error) {
					if (!(error instanceof CorruptCheckpointError)) throw error;
					await c!.delete(url); // damaged in storage: fetch it again
				}
			}
			if (await knownAbsent(name)) {
				seen[name] = false;
				return undefined;
			}
			let got = await prefixOf(url, probe);
			if (!got) {
				seen[name] = false;
				return undefined;
			}
			const n = headerLength(got.bytes, name, got.size);
			if (got.bytes.length < 8 + n) got = (await prefixOf(url, 8 + n))!;
			seen[name] = true;
			return parseSafetensorsHeader(got.bytes, name, got.size);
		},

		async openWeights(name, header: SafetensorsHeader, onBytes): Promise<ByteSource> {
			const url = base + name;
			const cachedBlob = blobs.get(name);
			if (cachedBlob) {
				onBytes(cachedBlob.size);
				return blobByteSource(cachedBlob);
			}
			const blob = await downloadWeights(url, name, header.declaredSize, onBytes);
			await cachePut(url, blob);
			return blobByteSource(blob);
		},

		async complete() {
			const c = await cache();
			if (!c) return;
			const files = { ...(await manifest())?.files, ...seen };
			const body = JSON.stringify({ version: 1, files } satisfies Manifest);
			await c.put(base + MANIFEST_NAME, new Response(body)).catch(() => {});
		}
	};
}

/** openCheckpoint over a URL prefix (browser, or Node with a fetch). */
export function openCheckpointFromUrl(
	prefix: string,
	options: UrlStoreOptions & OpenCheckpointOptions = {}
): Promise<Checkpoint> {
	return openCheckpoint(urlStore(prefix, options), options);
}
