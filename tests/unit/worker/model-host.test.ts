/**
 * The backend's model API (loadModel, scoreText, unloadModel) on Dawn, with real fetch
 * against a local HTTP server (Range, request log, cut-off bodies) and an in-memory cache:
 * the summary, logprobs against the f64 reference (1e-4), a second load with no request,
 * the memory budget refusing before any download, typed errors, 'busy', and a cut-off
 * download not cached (a retry works).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acquireGpu, type Gpu } from '../../../src/lib/gpu/device';
import { toTokenBatch } from '../../../src/lib/model/transformer/batch';
import { makeFixture, type Fixture } from '../../../src/lib/testing/fixtures';
import { referenceLogprobs } from '../../../src/lib/testing/reference';
import { Tokenizer } from '../../../src/lib/model/tokenizer/tokenizer';
import type { CacheLike } from '../../../src/lib/model/hf/url-checkpoint';
import { MemoryCache } from '../model/hf/url-host';
import { createBackend } from '../../../src/lib/worker/backend';
import { resolvePrefix } from '../../../src/lib/worker/model-host';
import type { BackendApi, ModelLoadProgress } from '../../../src/lib/worker/protocol';

/** Serves each fixture under /<name>/ ; `cut` paths send half their body, then reset. */
const repos = new Map<string, Fixture>();
const log: { path: string; range?: string }[] = [];
const cut = new Set<string>();
let server: Server;
let base = '';
let gpu: Gpu;

beforeAll(async () => {
	repos.set('llama', makeFixture('llama'));
	repos.set('qwen3', makeFixture('qwen3'));
	server = createServer((req, res) => {
		const path = req.url ?? '';
		log.push({ path, range: req.headers.range });
		const [, repo, file] = path.split('/');
		const data = repos.get(repo)?.files.get(file);
		if (data === undefined) return void res.writeHead(404).end('not found');
		const body = typeof data === 'string' ? new TextEncoder().encode(data) : data;
		const r = req.headers.range?.match(/^bytes=(\d+)-(\d+)$/);
		if (r) {
			const start = Number(r[1]);
			const end = Math.min(Number(r[2]), body.length - 1);
			res.writeHead(206, {
				'content-range': `bytes ${start}-${end}/${body.length}`,
				'content-length': String(end - start + 1)
			});
			return void res.end(body.subarray(start, end + 1));
		}
		res.writeHead(200, { 'content-length': String(body.length) });
		if (cut.has(path))
			return void res.write(body.subarray(0, body.length >> 1), () => res.destroy());
		res.end(body);
	});
	await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
	base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
	gpu = await acquireGpu();
});
afterAll(async () => {
	gpu?.destroy();
	server.closeAllConnections();
	await new Promise((ok) => server.close(ok));
});

function backend(cache: CacheLike | null): BackendApi {
	return createBackend({ acquire: async () => gpu, cases: [], models: { cache } });
}

const weightFiles = (f: Fixture) => [...f.shards.keys()];
/** Full (non-range) requests for weight files since `from`. */
const weightDownloads = (f: Fixture, from: number) =>
	log.slice(from).filter((l) => !l.range && weightFiles(f).some((w) => l.path.endsWith(`/${w}`)));

function expected(f: Fixture, text: string) {
	const tok = Tokenizer.fromJson(
		f.files.get('tokenizer.json') as string,
		f.files.get('tokenizer_config.json') as string
	);
	const ids = tok.encode(text);
	return { ids, ref: referenceLogprobs(f.config, f.tensors, toTokenBatch([ids])) };
}

const TEXT = 'hello world, the quick brown fox! ünïcode ✓';

describe('loadModel and scoreText', () => {
	it('loads by URL, scores like the f64 reference, and loads again from the cache', async () => {
		const llama = repos.get('llama')!;
		const cache = new MemoryCache();
		const api = backend(cache);
		const events: ModelLoadProgress[] = [];
		const from = log.length;
		const loaded = await api.loadModel(`${base}/llama`, (p) => events.push(p));
		if (!loaded.ok) throw new Error(loaded.error.message);
		const s = loaded.value;
		expect(structuredClone(s)).toEqual(s);
		expect(s).toMatchObject({
			url: `${base}/llama/`,
			architecture: 'LlamaForCausalLM',
			layers: llama.config.numLayers,
			hiddenSize: llama.config.hiddenSize,
			heads: llama.config.numHeads,
			kvHeads: llama.config.numKvHeads,
			vocabSize: llama.config.vocabSize,
			tiedEmbeddings: true,
			source: 'network',
			cacheAvailable: true
		});
		const params = [...llama.tensors.values()].reduce((n, t) => n + t.length, 0);
		expect(s.parameters).toBe(params);
		const fileBytes = (llama.files.get('model.safetensors') as Uint8Array).length;
		expect(s.weightBytes).toBe(fileBytes);
		expect(s.requests).toBe(log.length - from);
		// Progress: downloads end at the file size, uploads at the f32 bytes; both phases seen.
		const last = (phase: string) => events.filter((e) => e.phase === phase).at(-1);
		expect(last('download')).toMatchObject({ loaded: fileBytes, total: fileBytes });
		expect(last('upload')?.loaded).toBe(last('upload')?.total);

		const scored = await api.scoreText(TEXT);
		if (!scored.ok) throw new Error(scored.error.message);
		const { ids, ref } = expected(llama, TEXT);
		expect(scored.value.ids).toEqual(ids);
		expect(scored.value.tokens.join('')).toBe(TEXT);
		expect(scored.value.logprobs[0]).toBeNull();
		expect(scored.value.logprobs.length).toBe(ids.length);
		const err = Math.max(...ref.map((r, i) => Math.abs(r - scored.value.logprobs[i + 1]!)));
		expect(err).toBeLessThan(1e-4);

		// A fresh backend (a reloaded page) with the same cache: no request at all.
		const before = log.length;
		const again = await backend(cache).loadModel(`${base}/llama/`);
		if (!again.ok) throw new Error(again.error.message);
		expect(again.value).toMatchObject({ source: 'cache', requests: 0 });
		expect(log.length).toBe(before);
	});

	it('refuses a model over the memory budget before downloading weights', async () => {
		const llama = repos.get('llama')!;
		const from = log.length;
		const result = await backend(new MemoryCache()).loadModel(`${base}/llama/`, undefined, {
			memoryBudgetBytes: 10_000
		});
		expect(result.ok).toBe(false);
		if (result.ok) return;
		expect(result.error.kind).toBe('over-memory');
		expect(result.error.message).toMatch(/budget/);
		expect(structuredClone(result)).toEqual(result);
		expect(weightDownloads(llama, from)).toEqual([]);
	});

	it('returns bad input, no model and concurrent calls as typed errors', async () => {
		const api = backend(null);
		expect(await api.scoreText('hi')).toMatchObject({ ok: false, error: { kind: 'no-model' } });
		expect(await api.loadModel('not a url')).toMatchObject({
			ok: false,
			error: { kind: 'invalid-input' }
		});
		expect(
			await api.loadModel(`${base}/llama/`, undefined, { memoryBudgetBytes: -1 })
		).toMatchObject({ ok: false, error: { kind: 'invalid-input' } });
		const missing = await api.loadModel(`${base}/nothing-here/`);
		expect(missing).toMatchObject({ ok: false, error: { kind: 'missing-file' } });

		const pending = api.loadModel(`${base}/qwen3/`);
		expect(await api.scoreText('hi')).toMatchObject({ ok: false, error: { kind: 'busy' } });
		const loaded = await pending;
		expect(loaded).toMatchObject({ ok: true, value: { source: 'network', cacheAvailable: false } });
		expect(await api.scoreText('')).toMatchObject({ ok: false, error: { kind: 'invalid-input' } });
		const one = await api.scoreText('a');
		expect(one).toMatchObject({ ok: true, value: { logprobs: [null] } });

		const qwen3 = repos.get('qwen3')!;
		const scored = await api.scoreText(TEXT);
		if (!scored.ok) throw new Error(scored.error.message);
		const { ref } = expected(qwen3, TEXT);
		const err = Math.max(...ref.map((r, i) => Math.abs(r - scored.value.logprobs[i + 1]!)));
		expect(err).toBeLessThan(1e-4);

		expect(await api.unloadModel()).toEqual({ ok: true, value: undefined });
		expect(await api.scoreText('hi')).toMatchObject({ ok: false, error: { kind: 'no-model' } });
	});

	it('a download cut off halfway is a typed error, not cached; a retry succeeds', async () => {
		const qwen3 = repos.get('qwen3')!;
		const shard = weightFiles(qwen3)[1];
		const url = `${base}/qwen3/${shard}`;
		cut.add(`/qwen3/${shard}`);
		const cache = new MemoryCache();
		const api = backend(cache);
		const failed = await api.loadModel(`${base}/qwen3/`);
		expect(failed.ok).toBe(false);
		if (!failed.ok) expect(['download-failed', 'incomplete-download']).toContain(failed.error.kind);
		expect(cache.entries.has(url)).toBe(false);
		expect(await api.scoreText('hi')).toMatchObject({ ok: false, error: { kind: 'no-model' } });

		cut.clear();
		const retry = await api.loadModel(`${base}/qwen3/`);
		expect(retry).toMatchObject({ ok: true, value: { source: 'network' } });
		expect(cache.entries.get(url)?.size).toBe((qwen3.files.get(shard) as Uint8Array).length);
	});
});

describe('resolvePrefix', () => {
	it('adds the trailing slash and takes only http(s)', () => {
		expect(resolvePrefix(' https://h.co/a/resolve/main ')).toBe('https://h.co/a/resolve/main/');
		expect(resolvePrefix('http://127.0.0.1:1/x/')).toBe('http://127.0.0.1:1/x/');
		expect(resolvePrefix('')).toBeUndefined();
		expect(resolvePrefix('file:///etc/')).toBeUndefined();
		expect(resolvePrefix('/models/x')).toBeUndefined(); // no page origin in Node
	});
});
