/**
 * Opening checkpoints from a URL prefix with Node's real fetch against a local HTTP server
 * on 127.0.0.1 (node:http, Range support, request log). The cache is an in-memory
 * implementation of the Cache API subset (the real Cache API is exercised by the e2e suite).
 * Checks: the files and tensors arrive intact, headers are range-read and checked before
 * any weight download, progress is monotone and ends at the total, a second load makes no
 * request, a cut download resumes by range (or starts over where ranges are refused or the
 * file changed), and a download that did not finish is never cached.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { LoadProgress } from '../../../../src/lib/model/hf/checkpoint';
import { makeFixture, type Fixture } from '../../../../src/lib/testing/fixtures';
import {
	checkModelMemory,
	estimateModelMemory
} from '../../../../src/lib/model/transformer/memory';
import {
	MANIFEST_NAME,
	MAX_RESUMES,
	openCheckpointFromUrl,
	type CacheLike,
	type FetchLike
} from '../../../../src/lib/model/hf/url-checkpoint';

class MemoryCache implements CacheLike {
	readonly entries = new Map<string, Blob>();
	async match(key: string) {
		const blob = this.entries.get(key);
		return blob ? new Response(blob) : undefined;
	}
	async put(key: string, response: Response) {
		this.entries.set(key, await response.blob());
	}
	async delete(key: string) {
		return this.entries.delete(key);
	}
}

interface Logged {
	path: string;
	range?: string;
	status: number;
}

/** Serves repos under /<repo>/resolve/main/<file>; behaviour per file is adjustable. */
class FixtureServer {
	readonly repos = new Map<string, Map<string, Uint8Array | string>>();
	readonly log: Logged[] = [];
	/** Paths whose every download is cut off halfway (the socket is destroyed). */
	readonly cutOff = new Set<string>();
	/** Paths whose next download only is cut off halfway; `afterCut` runs then. */
	readonly cutOnce = new Set<string>();
	afterCut?: () => void;
	/** Each file's ETag (its version: bump it when a test changes the file). */
	readonly etags = new Map<string, string>();
	/** Answer every request with the whole file (no Range support). */
	ignoreRange = false;
	/** Status to answer for every request (e.g. 401), when set. */
	forceStatus?: number;
	private server!: Server;
	base = '';

	async start() {
		this.server = createServer((req, res) => this.handle(req, res));
		await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
		this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
	}

	async stop() {
		this.server.closeAllConnections();
		await new Promise((resolve) => this.server.close(resolve));
	}

	url(repo: string) {
		return `${this.base}/${repo}/resolve/main/`;
	}

	private handle(req: IncomingMessage, res: ServerResponse) {
		const path = req.url ?? '';
		const m = path.match(/^\/([^/]+)\/resolve\/main\/([^/]+)$/);
		const data = m ? this.repos.get(m[1])?.get(m[2]) : undefined;
		const range = req.headers.range;
		const log = (status: number) => this.log.push({ path, range, status });
		if (this.forceStatus) {
			log(this.forceStatus);
			res.writeHead(this.forceStatus).end('no');
			return;
		}
		if (data === undefined) {
			log(404);
			res.writeHead(404).end('Entry not found');
			return;
		}
		const body = typeof data === 'string' ? new TextEncoder().encode(data) : data;
		const etag = `"${this.etags.get(path) ?? 'v1'}"`;
		const r = range?.match(/^bytes=(\d+)-(\d*)$/);
		let part = body;
		if (r && !this.ignoreRange) {
			const start = Number(r[1]);
			const end = r[2] ? Math.min(Number(r[2]), body.length - 1) : body.length - 1;
			log(206);
			res.writeHead(206, {
				'content-range': `bytes ${start}-${end}/${body.length}`,
				'content-length': String(end - start + 1),
				'accept-ranges': 'bytes',
				etag
			});
			part = body.subarray(start, end + 1);
		} else {
			log(200);
			res.writeHead(200, { 'content-length': String(body.length), etag });
		}
		// header probes (a closed range) come whole; downloads and resumes may be cut
		const download = !r || r[2] === '';
		if (download && (this.cutOff.has(path) || this.cutOnce.delete(path))) {
			// the half reaches the client before the drop (a resume starts from it)
			res.write(part.subarray(0, part.length >> 1), () =>
				setTimeout(() => {
					res.destroy();
					this.afterCut?.();
				}, 20)
			);
			return;
		}
		res.end(part);
	}
}

const server = new FixtureServer();
let llama: Fixture;
let qwen3: Fixture;
beforeAll(async () => {
	await server.start();
	llama = makeFixture('llama');
	qwen3 = makeFixture('qwen3');
	server.repos.set('llama', llama.files);
	server.repos.set('qwen3', qwen3.files);
});
afterAll(() => server.stop());
beforeEach(() => {
	server.log.length = 0;
	server.cutOff.clear();
	server.cutOnce.clear();
	server.afterCut = undefined;
	server.ignoreRange = false;
	server.forceStatus = undefined;
});

/** Whether a request resumes a download: a range from a byte past 0 to the end. */
const isResume = (init?: RequestInit) =>
	/^bytes=[1-9]\d*-$/.test(new Headers(init?.headers).get('range') ?? '');

function weightBytes(fixture: Fixture): number {
	let n = 0;
	for (const file of fixture.shards.keys()) n += (fixture.files.get(file) as Uint8Array).length;
	return n;
}

async function expectIntact(
	ckpt: Awaited<ReturnType<typeof openCheckpointFromUrl>>,
	fixture: Fixture
) {
	expect(ckpt.config).toEqual(fixture.config);
	for (const [name, values] of fixture.tensors)
		expect(Array.from(await ckpt.weights.readF32(name)), name).toEqual(Array.from(values));
	expect(ckpt.files.tokenizerJson).toBe(fixture.files.get('tokenizer.json'));
	expect(ckpt.files.tokenizerConfigJson).toBe(fixture.files.get('tokenizer_config.json'));
}

function expectMonotone(events: LoadProgress[], total: number) {
	expect(events.length).toBeGreaterThan(1);
	for (let i = 1; i < events.length; i++)
		expect(events[i].loaded).toBeGreaterThanOrEqual(events[i - 1].loaded);
	for (const e of events) expect(e.total).toBe(total);
	expect(events[0].loaded).toBe(0);
	expect(events[events.length - 1].loaded).toBe(total);
}

describe('openCheckpointFromUrl', () => {
	it('loads a sharded checkpoint intact; headers first by range, then whole files', async () => {
		const cache = new MemoryCache();
		const events: LoadProgress[] = [];
		const ckpt = await openCheckpointFromUrl(server.url('qwen3'), {
			cache,
			onProgress: (p) => events.push(p)
		});
		await expectIntact(ckpt, qwen3);
		expect(ckpt.where).toBe(server.url('qwen3'));
		expectMonotone(events, weightBytes(qwen3));
		const shards = [...qwen3.shards.keys()];
		const shardRequests = server.log.filter((l) => shards.some((s) => l.path.endsWith(s)));
		// Two range reads of headers (206), then two full downloads (200), in that order.
		expect(shardRequests.map((l) => l.status)).toEqual([206, 206, 200, 200]);
		expect(shardRequests.slice(0, 2).every((l) => l.range?.startsWith('bytes=0-'))).toBe(true);
		// Absent optional files were asked for once (404) and recorded in the manifest.
		expect(server.log.filter((l) => l.status === 404).map((l) => l.path.split('/').pop())).toEqual([
			'chat_template.jinja'
		]);
		expect(cache.entries.has(server.url('qwen3') + MANIFEST_NAME)).toBe(true);
	});

	it('a second load with the same cache makes no network request', async () => {
		const cache = new MemoryCache();
		await openCheckpointFromUrl(server.url('llama'), { cache });
		const first = server.log.length;
		expect(first).toBeGreaterThan(0);
		const events: LoadProgress[] = [];
		const noNetwork: FetchLike = async (url) => {
			throw new Error(`unexpected request for ${url}`);
		};
		const ckpt = await openCheckpointFromUrl(server.url('llama'), {
			cache,
			fetch: noNetwork,
			onProgress: (p) => events.push(p)
		});
		await expectIntact(ckpt, llama);
		expectMonotone(events, weightBytes(llama));
		expect(server.log.length).toBe(first);
	});

	it('works without a cache and with a server that ignores Range', async () => {
		server.ignoreRange = true;
		const events: LoadProgress[] = [];
		const ckpt = await openCheckpointFromUrl(server.url('llama'), {
			cache: null,
			onProgress: (p) => events.push(p)
		});
		await expectIntact(ckpt, llama);
		expectMonotone(events, weightBytes(llama));
		expect(server.log.every((l) => l.status !== 206)).toBe(true);
	});

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

	it('a truncated file on the server is refused from its header, before downloading it', async () => {
		const bytes = llama.files.get('model.safetensors') as Uint8Array;
		server.repos.set(
			'truncated',
			new Map([...llama.files, ['model.safetensors', bytes.subarray(0, bytes.length - 64)]])
		);
		const err = await openCheckpointFromUrl(server.url('truncated'), {
			cache: new MemoryCache()
		}).catch((e) => e);
		expect(err).toMatchObject({ kind: 'corrupt-checkpoint', file: 'model.safetensors' });
		expect(server.log.filter((l) => l.path.endsWith('.safetensors') && l.status === 200)).toEqual(
			[]
		);
	});

	it('weights that do not match the config are refused before downloading them', async () => {
		server.repos.set(
			'mismatch',
			new Map([
				...llama.files,
				['config.json', JSON.stringify({ ...llama.rawConfig, hidden_size: 40 })]
			])
		);
		const err = await openCheckpointFromUrl(server.url('mismatch'), { cache: null }).catch(
			(e) => e
		);
		expect(err.kind).toBe('weights-mismatch');
		expect(server.log.filter((l) => l.path.endsWith('.safetensors')).map((l) => l.status)).toEqual([
			206
		]);
	});

	it('a model over the device limits is refused before its weights are downloaded', async () => {
		const limits = { maxStorageBufferBindingSize: 4096, maxBufferSize: 4096 };
		const err = await openCheckpointFromUrl(server.url('llama'), {
			cache: null,
			beforeWeights: (c) =>
				checkModelMemory(estimateModelMemory(c, { limits }), limits, 50_000, 'the llama fixture')
		}).catch((e) => e);
		expect(err).toMatchObject({ kind: 'over-memory' });
		expect(err.message).toMatch(/the llama fixture/);
		expect(server.log.filter((l) => l.path.endsWith('.safetensors')).map((l) => l.status)).toEqual([
			206
		]);
	});

	it('missing files name the file and the URL prefix', async () => {
		const withoutWeights = new Map(llama.files);
		withoutWeights.delete('model.safetensors');
		server.repos.set('noweights', withoutWeights);
		const err = await openCheckpointFromUrl(server.url('noweights'), { cache: null }).catch(
			(e) => e
		);
		expect(err).toMatchObject({
			kind: 'missing-file',
			file: 'model.safetensors',
			where: server.url('noweights')
		});
		const none = await openCheckpointFromUrl(server.url('nothing-here'), { cache: null }).catch(
			(e) => e
		);
		expect(none).toMatchObject({ kind: 'missing-file', file: 'config.json' });
	});

	it('HTTP errors and network failures are DownloadErrors (401 hints at gated repos)', async () => {
		server.forceStatus = 401;
		const err = await openCheckpointFromUrl(server.url('llama'), { cache: null }).catch((e) => e);
		expect(err).toMatchObject({ kind: 'download-failed', status: 401 });
		expect(err.message).toMatch(/gated/);
		server.forceStatus = undefined;
		const refused = await openCheckpointFromUrl('http://127.0.0.1:1/x/resolve/main/', {
			cache: null
		}).catch((e) => e);
		expect(refused).toMatchObject({ kind: 'download-failed' });
		// no answer at all: what it may be (offline, down, CORS) and what to do
		expect(refused.message).toMatch(/the server did not answer .*Check the address.*CORS/);
		const nav = Object.getOwnPropertyDescriptor(globalThis, 'navigator');
		Object.defineProperty(globalThis, 'navigator', {
			value: { onLine: false },
			configurable: true
		});
		try {
			const offline = await openCheckpointFromUrl('http://127.0.0.1:1/x/resolve/main/', {
				cache: null
			}).catch((e) => e);
			expect(offline).toMatchObject({ kind: 'download-failed', offline: true });
			expect(offline.message).toMatch(/this browser is offline\. Connect to the network/);
		} finally {
			if (nav) Object.defineProperty(globalThis, 'navigator', nav);
			else delete (globalThis as { navigator?: unknown }).navigator;
		}
	});

	it('sends the given headers (e.g. an access token) with every request', async () => {
		const seen: (string | null)[] = [];
		const spy: FetchLike = (url, init) => {
			seen.push(new Headers(init?.headers).get('authorization'));
			return fetch(url, init);
		};
		await openCheckpointFromUrl(server.url('llama'), {
			cache: null,
			fetch: spy,
			headers: { Authorization: 'Bearer hf_test' }
		});
		expect(seen.length).toBeGreaterThan(5);
		expect(seen.every((h) => h === 'Bearer hf_test')).toBe(true);
	});
});
