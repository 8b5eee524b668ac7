/**
 * Opening checkpoints from a URL prefix with Node's real fetch against a Hub-like host on
 * 127.0.0.1 (url-host.ts). Checks: the files and tensors arrive intact, headers are
 * range-read and checked before any weight download, progress is monotone and ends at the
 * total, a second load makes no request, and bad repos and HTTP failures are typed errors.
 * Cut and short downloads: checkpoint-url-resume.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { LoadProgress } from '../../../../src/lib/model/hf/checkpoint';
import {
	checkModelMemory,
	estimateModelMemory
} from '../../../../src/lib/model/transformer/memory';
import {
	MANIFEST_NAME,
	openCheckpointFromUrl,
	type FetchLike
} from '../../../../src/lib/model/hf/url-checkpoint';
import {
	expectIntact,
	expectMonotone,
	MemoryCache,
	useFixtureServer,
	weightBytes
} from './url-host';

const { server, fixtures } = useFixtureServer();
const { llama, qwen3 } = fixtures;

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
