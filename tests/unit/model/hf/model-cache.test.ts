/**
 * The model cache's listing and delete (model-cache.ts) over an in-memory implementation of
 * the Cache API subset (keys in insertion order, Requests as keys), filled the way the page
 * fills it: fixture models opened through url-checkpoint with a fetch that serves their
 * files. Checks: one entry per model with its name, bytes and file count, the manifest's
 * verdict, Content-Length trusted over reading a body, and a delete that takes exactly one
 * model's entries.
 */
import { describe, expect, it } from 'vitest';
import {
	cachedModelName,
	deleteCachedModel,
	listCachedModels,
	type ListableCache
} from '../../../../src/lib/model/hf/model-cache';
import {
	MANIFEST_NAME,
	openCheckpointFromUrl,
	type FetchLike
} from '../../../../src/lib/model/hf/url-checkpoint';
import { makeFixture, type FixtureName } from '../../../../src/lib/testing/fixtures';

class MemoryCache implements ListableCache {
	/** Key -> the stored body and headers, as the Cache API keeps a response. */
	readonly entries = new Map<string, { body: ArrayBuffer; headers: [string, string][] }>();
	/** Keys whose body was read: a listing should read none but manifests'. */
	readonly bodiesRead: string[] = [];
	async match(key: string) {
		const entry = this.entries.get(key);
		if (!entry) return undefined;
		const res = new Response(entry.body.slice(0), { headers: entry.headers });
		const read = () => this.bodiesRead.push(key);
		for (const method of ['arrayBuffer', 'blob', 'json', 'text'] as const) {
			const original = res[method].bind(res);
			Object.defineProperty(res, method, {
				value: () => (read(), original())
			});
		}
		return res;
	}
	async put(key: string, response: Response) {
		// (as the Cache API does: the body is stored whole before put resolves)
		this.entries.set(key, {
			body: await response.arrayBuffer(),
			headers: [...response.headers]
		});
	}
	async delete(key: string) {
		return this.entries.delete(key);
	}
	async keys() {
		return [...this.entries.keys()].map((url) => new Request(url));
	}
}

const fileBytes = (v: Uint8Array | string) =>
	typeof v === 'string' ? new TextEncoder().encode(v).length : v.length;

/** Serves the fixtures under `${base}<name>/`: 404 for any other file. */
function serve(base: string, names: FixtureName[]) {
	const files = new Map<string, Uint8Array | string>();
	for (const name of names)
		for (const [file, data] of makeFixture(name).files) files.set(`${base}${name}/${file}`, data);
	const fetch: FetchLike = async (url) => {
		const data = files.get(url);
		if (data === undefined) return new Response('Entry not found', { status: 404 });
		const body = typeof data === 'string' ? data : new Uint8Array(data);
		return new Response(body, { headers: { 'content-length': String(fileBytes(data)) } });
	};
	const sizeUnder = (prefix: string) =>
		[...files].filter(([u]) => u.startsWith(prefix)).reduce((n, [, d]) => n + fileBytes(d), 0);
	return {
		fetch,
		sizeUnder,
		countUnder: (p: string) => [...files.keys()].filter((u) => u.startsWith(p)).length
	};
}

describe('cachedModelName', () => {
	it('names a resolve URL by its repo, a revision other than main after @', () => {
		expect(
			cachedModelName('https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct/resolve/main/')
		).toBe('HuggingFaceTB/SmolLM2-135M-Instruct');
		expect(cachedModelName('https://hf-mirror.com/Qwen/Qwen3-0.6B/resolve/v1.0/')).toBe(
			'Qwen/Qwen3-0.6B@v1.0'
		);
	});
	it('names any other folder by host and path', () => {
		expect(cachedModelName('http://127.0.0.1:4173/fixtures/llama/')).toBe(
			'127.0.0.1:4173/fixtures/llama'
		);
	});
});

describe('listCachedModels / deleteCachedModel', () => {
	const hub = 'https://huggingface.co/org/';

	async function filled(names: FixtureName[]) {
		const cache = new MemoryCache();
		const site = serve(hub, names);
		for (const name of names)
			await openCheckpointFromUrl(`${hub}${name}/resolve/main/`, {
				cache,
				fetch: rewrite(site.fetch)
			});
		return { cache, site };
	}
	/** The Hub's resolve URLs onto the served folders (`org/<name>/resolve/main/f` -> `org/<name>/f`). */
	const rewrite =
		(fetch: FetchLike): FetchLike =>
		(url, init) =>
			fetch(url.replace('/resolve/main/', '/'), init);

	it('lists each loaded model once, with its bytes, files and a complete manifest', async () => {
		const { cache, site } = await filled(['llama', 'qwen2']);
		const models = await listCachedModels(cache);
		expect(models.map((m) => m.name)).toEqual(['org/llama', 'org/qwen2']);
		for (const m of models) {
			const served = `${hub}${m.name.split('/')[1]}/`;
			const manifest = (await cache.match(m.prefix + MANIFEST_NAME))!;
			const manifestBytes = (await manifest.arrayBuffer()).byteLength;
			expect(m.prefix).toBe(`${served}resolve/main/`);
			expect(m.complete).toBe(true);
			expect(m.files).toBe(site.countUnder(served) + 1);
			expect(m.bytes).toBe(site.sizeUnder(served) + manifestBytes);
		}
	});

	it('reads no body but the manifests when Content-Length tells the size', async () => {
		const { cache } = await filled(['llama']);
		cache.bodiesRead.length = 0;
		await listCachedModels(cache);
		expect(cache.bodiesRead).toEqual([`${hub}llama/resolve/main/${MANIFEST_NAME}`]);
	});

	it("measures an entry's body when it has no Content-Length", async () => {
		const cache = new MemoryCache();
		const prefix = 'http://127.0.0.1:9/models/tiny/';
		await cache.put(`${prefix}config.json`, new Response('{"a":1}'));
		await cache.put(`${prefix}model.safetensors`, new Response(new Uint8Array(1000)));
		const [m] = await listCachedModels(cache);
		expect(m).toEqual({
			prefix,
			name: '127.0.0.1:9/models/tiny',
			bytes: 1007,
			files: 2,
			complete: false
		});
	});

	it('calls a load without its manifest, or missing a file the manifest lists, incomplete', async () => {
		const { cache } = await filled(['llama', 'qwen2']);
		const llama = `${hub}llama/resolve/main/`;
		await cache.delete(llama + MANIFEST_NAME);
		await cache.delete(`${hub}qwen2/resolve/main/config.json`);
		const models = await listCachedModels(cache);
		expect(models.map((m) => [m.name, m.complete])).toEqual([
			['org/llama', false],
			['org/qwen2', false]
		]);
	});

	it('deletes one model, manifest and all, and leaves the others whole', async () => {
		const { cache } = await filled(['llama', 'qwen2', 'qwen3']);
		const before = await listCachedModels(cache);
		const qwen2 = before.find((m) => m.name === 'org/qwen2')!;
		expect(await deleteCachedModel(cache, qwen2.prefix)).toBe(qwen2.files);
		const keys = (await cache.keys()).map((r) => r.url);
		expect(keys.filter((u) => u.startsWith(qwen2.prefix))).toEqual([]);
		expect(await listCachedModels(cache)).toEqual(before.filter((m) => m !== qwen2));
	});

	it('deletes nothing for a prefix that holds no model', async () => {
		const { cache } = await filled(['llama']);
		const n = cache.entries.size;
		expect(await deleteCachedModel(cache, `${hub}other/resolve/main/`)).toBe(0);
		expect(cache.entries.size).toBe(n);
	});

	it('lists an empty cache as no models', async () => {
		expect(await listCachedModels(new MemoryCache())).toEqual([]);
	});
});
