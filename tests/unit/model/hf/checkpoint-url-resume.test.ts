/**
 * A weight download cut off or ended short (url-host.ts's host and proxies over Node's real
 * fetch): it resumes by range from the byte it reached, starts over where ranges are
 * refused, the file changed (ETag) or Content-Range is hidden, gives a typed error after
 * MAX_RESUMES, and a download that did not finish is never cached.
 */
import { describe, expect, it } from 'vitest';
import type { LoadProgress } from '../../../../src/lib/model/hf/checkpoint';
import {
	MANIFEST_NAME,
	MAX_RESUMES,
	openCheckpointFromUrl,
	type FetchLike
} from '../../../../src/lib/model/hf/url-checkpoint';
import {
	expectIntact,
	expectMonotone,
	isResume,
	MemoryCache,
	useFixtureServer,
	weightBytes
} from './url-host';

const { server, fixtures } = useFixtureServer();
const { llama } = fixtures;

describe('openCheckpointFromUrl: cut and short downloads', () => {
	it('a connection cut mid-download resumes from the byte it reached: intact, counted once, cached', async () => {
		const cache = new MemoryCache();
		const weightsUrl = server.url('llama') + 'model.safetensors';
		const path = new URL(weightsUrl).pathname;
		server.cutOnce.add(path);
		const events: LoadProgress[] = [];
		const ckpt = await openCheckpointFromUrl(server.url('llama'), {
			cache,
			onProgress: (p) => events.push(p)
		});
		await expectIntact(ckpt, llama);
		expectMonotone(events, weightBytes(llama));
		const weights = server.log.filter((l) => l.path === path);
		// the header probe, the cut download, the resume from where it broke
		expect(weights.map((l) => l.status)).toEqual([206, 200, 206]);
		const from = Number(weights[2].range?.match(/^bytes=(\d+)-$/)?.[1]);
		expect(from).toBeGreaterThan(0);
		expect(from).toBeLessThan(weightBytes(llama));
		expect(cache.entries.get(weightsUrl)?.size).toBe(weightBytes(llama));
	});

	it('a connection cut on every try: typed error after MAX_RESUMES resumes, nothing cached; a later load completes', async () => {
		const cache = new MemoryCache();
		const weightsUrl = server.url('llama') + 'model.safetensors';
		const path = new URL(weightsUrl).pathname;
		server.cutOff.add(path);
		const events: LoadProgress[] = [];
		const err = await openCheckpointFromUrl(server.url('llama'), {
			cache,
			onProgress: (p) => events.push(p)
		}).catch((e) => e);
		expect(err.kind).toBe('download-failed');
		expect(err.url).toBe(weightsUrl);
		// each resume went on from further in the file
		const resumes = server.log.filter((l) => l.path === path && l.range?.endsWith('-'));
		expect(resumes).toHaveLength(MAX_RESUMES);
		const starts = resumes.map((l) => Number(l.range!.slice(6, -1)));
		for (let i = 1; i < starts.length; i++) expect(starts[i]).toBeGreaterThan(starts[i - 1]);
		expect(cache.entries.has(weightsUrl)).toBe(false);
		expect(cache.entries.has(server.url('llama') + MANIFEST_NAME)).toBe(false);
		expect(events[events.length - 1].loaded).toBeLessThan(weightBytes(llama));

		server.cutOff.clear();
		const ckpt = await openCheckpointFromUrl(server.url('llama'), { cache });
		await expectIntact(ckpt, llama);
		expect(cache.entries.get(weightsUrl)?.size).toBe(weightBytes(llama));
	});

	it('a server without ranges starts the file over after a cut; progress stays monotone', async () => {
		server.ignoreRange = true;
		const path = new URL(server.url('llama') + 'model.safetensors').pathname;
		server.cutOnce.add(path);
		const events: LoadProgress[] = [];
		const ckpt = await openCheckpointFromUrl(server.url('llama'), {
			cache: new MemoryCache(),
			onProgress: (p) => events.push(p)
		});
		await expectIntact(ckpt, llama);
		expectMonotone(events, weightBytes(llama));
		const weights = server.log.filter((l) => l.path === path);
		expect(weights.map((l) => l.status)).toEqual([200, 200, 200]);
	});

	it('a file changed on the server between the cut and the resume starts over (its ETag)', async () => {
		const cache = new MemoryCache();
		const changed = (llama.files.get('model.safetensors') as Uint8Array).slice();
		changed[changed.length - 1] ^= 0x01; // a weight's last byte: same header, other values
		server.repos.set('changing', new Map(llama.files));
		const changingPath = `/changing/resolve/main/model.safetensors`;
		server.cutOnce.add(changingPath);
		server.afterCut = () => {
			server.repos.get('changing')!.set('model.safetensors', changed);
			server.etags.set(changingPath, 'v2');
		};
		await openCheckpointFromUrl(server.url('changing'), { cache });
		const weights = server.log.filter((l) => l.path === changingPath);
		// the resume got a range of version 2 (another ETag): dropped, and the whole file again
		expect(weights.map((l) => l.status)).toEqual([206, 200, 206, 200]);
		expect(weights[2].range).toMatch(/^bytes=\d+-$/);
		expect(weights[3].range).toBeUndefined();
		const cached = new Uint8Array(
			await cache.entries.get(server.url('changing') + 'model.safetensors')!.arrayBuffer()
		);
		expect(cached).toEqual(changed);
		server.etags.delete(changingPath);
	});

	it('a resume whose Content-Range cannot be read (not exposed cross-origin) starts over', async () => {
		const weightsUrl = server.url('llama') + 'model.safetensors';
		const path = new URL(weightsUrl).pathname;
		server.cutOnce.add(path);
		const hidden: FetchLike = async (url, init) => {
			const res = await fetch(url, init);
			if (url !== weightsUrl || !isResume(init)) return res;
			const headers = new Headers(res.headers);
			headers.delete('content-range');
			return new Response(res.body, { status: res.status, headers });
		};
		const ckpt = await openCheckpointFromUrl(server.url('llama'), {
			cache: new MemoryCache(),
			fetch: hidden
		});
		await expectIntact(ckpt, llama);
		const weights = server.log.filter((l) => l.path === path);
		expect(weights.map((l) => l.status)).toEqual([206, 200, 206, 200]);
	});

	it('a body that ends early on every try is not taken for a complete file', async () => {
		const cache = new MemoryCache();
		const weightsUrl = server.url('llama') + 'model.safetensors';
		// A proxy that passes requests on but ends each weights body cleanly after 1000 bytes:
		// the whole file's (200) and each resume's (a range from a byte past 0).
		const shortBody: FetchLike = async (url, init) => {
			const res = await fetch(url, init);
			if (url !== weightsUrl || !(res.status === 200 || isResume(init))) return res;
			const bytes = new Uint8Array(await res.arrayBuffer()).slice(0, 1000);
			return new Response(bytes, { status: res.status, headers: res.headers });
		};
		const err = await openCheckpointFromUrl(server.url('llama'), { cache, fetch: shortBody }).catch(
			(e) => e
		);
		expect(err).toMatchObject({
			kind: 'incomplete-download',
			received: 1000 * (1 + MAX_RESUMES),
			url: weightsUrl
		});
		expect(err.expected).toBe(weightBytes(llama));
		expect(cache.entries.has(weightsUrl)).toBe(false);
		expect(cache.entries.has(server.url('llama') + MANIFEST_NAME)).toBe(false);
		// The small files that did arrive whole may stay cached; the load still needs the network.
		await expect(
			openCheckpointFromUrl(server.url('llama'), {
				cache,
				fetch: async () => {
					throw new Error('offline');
				}
			})
		).rejects.toMatchObject({ kind: 'download-failed' });
	});

	it('a body whose length disagrees with Content-Length is not cached', async () => {
		const cache = new MemoryCache();
		const weightsUrl = server.url('llama') + 'model.safetensors';
		const lying: FetchLike = async (url, init) => {
			const res = await fetch(url, init);
			if (url !== weightsUrl || res.status !== 200) return res;
			const body = await res.arrayBuffer();
			return new Response(body, {
				status: 200,
				headers: { 'content-length': String(body.byteLength + 10) }
			});
		};
		const err = await openCheckpointFromUrl(server.url('llama'), { cache, fetch: lying }).catch(
			(e) => e
		);
		expect(err).toMatchObject({ kind: 'incomplete-download' });
		expect(cache.entries.has(weightsUrl)).toBe(false);
	});

	it('a JSON file that arrived cut short is not cached', async () => {
		const cache = new MemoryCache();
		const configUrl = server.url('llama') + 'config.json';
		const cut: FetchLike = async (url, init) => {
			const res = await fetch(url, init);
			return url === configUrl ? new Response((await res.text()).slice(0, 50)) : res;
		};
		const err = await openCheckpointFromUrl(server.url('llama'), { cache, fetch: cut }).catch(
			(e) => e
		);
		expect(err).toMatchObject({ kind: 'invalid-config' });
		expect(cache.entries.has(configUrl)).toBe(false);
	});
});
