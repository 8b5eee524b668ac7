/**
 * @file What the URL-checkpoint tests share (checkpoint-url*.test.ts): a Hub-like host on
 * 127.0.0.1 (node:http; repos under /<repo>/resolve/main/<file>, Range, ETag, a request log,
 * cuts and forced statuses on demand) serving the llama and qwen3 fixtures, an in-memory
 * Cache API subset (the real Cache API is exercised by the e2e suite), and the checks that a
 * load arrived intact with monotone progress.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, expect } from 'vitest';
import type { LoadProgress } from '../../../../src/lib/model/hf/checkpoint';
import { makeFixture, type Fixture } from '../../../../src/lib/testing/fixtures';
import type { CacheLike, openCheckpointFromUrl } from '../../../../src/lib/model/hf/url-checkpoint';

export class MemoryCache implements CacheLike {
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

export interface Logged {
	path: string;
	range?: string;
	status: number;
}

/** Serves repos under /<repo>/resolve/main/<file>; behaviour per file is adjustable. */
export class FixtureServer {
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

/**
 * A host serving the llama and qwen3 fixtures for this test file: started before its tests,
 * stopped after, its log and faults cleared before each.
 */
export function useFixtureServer(): {
	server: FixtureServer;
	fixtures: { llama: Fixture; qwen3: Fixture };
} {
	const server = new FixtureServer();
	const fixtures = { llama: makeFixture('llama'), qwen3: makeFixture('qwen3') };
	beforeAll(async () => {
		await server.start();
		server.repos.set('llama', fixtures.llama.files);
		server.repos.set('qwen3', fixtures.qwen3.files);
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
	return { server, fixtures };
}

/** Whether a request resumes a download: a range from a byte past 0 to the end. */
export const isResume = (init?: RequestInit) =>
	/^bytes=[1-9]\d*-$/.test(new Headers(init?.headers).get('range') ?? '');

export function weightBytes(fixture: Fixture): number {
	let n = 0;
	for (const file of fixture.shards.keys()) n += (fixture.files.get(file) as Uint8Array).length;
	return n;
}

export async function expectIntact(
	ckpt: Awaited<ReturnType<typeof openCheckpointFromUrl>>,
	fixture: Fixture
) {
	expect(ckpt.config).toEqual(fixture.config);
	for (const [name, values] of fixture.tensors)
		expect(Array.from(await ckpt.weights.readF32(name)), name).toEqual(Array.from(values));
	expect(ckpt.files.tokenizerJson).toBe(fixture.files.get('tokenizer.json'));
	expect(ckpt.files.tokenizerConfigJson).toBe(fixture.files.get('tokenizer_config.json'));
}

export function expectMonotone(events: LoadProgress[], total: number) {
	expect(events.length).toBeGreaterThan(1);
	for (let i = 1; i < events.length; i++)
		expect(events[i].loaded).toBeGreaterThanOrEqual(events[i - 1].loaded);
	for (const e of events) expect(e.total).toBe(total);
	expect(events[0].loaded).toBe(0);
	expect(events[events.length - 1].loaded).toBe(total);
}
