/**
 * @file A tiny static server for the built site (`build/`) on 127.0.0.1 (a secure context,
 * as WebGPU requires), SPA fallback `200.html`. Mounts serve more folders under a prefix as a
 * model host does (206 ranges, 404 unknowns, every request logged) with faults on demand on
 * a file's downloads, whole or resumed from a byte (header probes, closed ranges, come whole):
 * 'cut' drops the connection halfway under a full Content-Length, 'short' ends early,
 * 'cut-once' cuts the next download only.
 */
import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { extname, join, normalize, resolve, sep } from 'node:path';

const TYPES: Record<string, string> = {
	'.html': 'text/html; charset=utf-8',
	'.js': 'text/javascript; charset=utf-8',
	'.mjs': 'text/javascript; charset=utf-8',
	'.css': 'text/css; charset=utf-8',
	'.json': 'application/json',
	'.svg': 'image/svg+xml',
	'.png': 'image/png',
	'.ico': 'image/x-icon',
	'.wasm': 'application/wasm',
	'.txt': 'text/plain; charset=utf-8'
};

export interface ServeOptions {
	/** URL path prefix (e.g. '/fixtures/') -> the folder served under it. */
	mounts?: Record<string, string>;
	/**
	 * A folder of model folders served as the Hub serves repos, for pages of another origin:
	 * `HUB_PATH<repo>/resolve/main/<file>` answers CORS preflights, sends small files itself
	 * and redirects weight files (302) to `HUB_CDN_PATH<repo>/<file>`, all with CORS headers.
	 */
	hub?: string;
}

export const HUB_PATH = '/hub/';
export const HUB_CDN_PATH = '/hub-cdn/';

/** What the Hub and its CDN send cross-origin: any origin, and the headers a loader reads. */
const CORS_HEADERS = {
	'access-control-allow-origin': '*',
	'access-control-expose-headers': 'content-range, content-length, etag, accept-ranges'
};

/** One request for a file under a mount. */
export interface ServedRequest {
	path: string;
	/** The Range header, if any. */
	range?: string;
	status: number;
}

/** How long a cut download's first half has to reach the client before the drop. */
const CUT_DELAY_MS = 200;

/** How to spoil a download; see the file comment. */
export type Fault = 'cut' | 'short' | 'cut-once';

export interface StaticServer {
	url: string;
	/** Requests under the mounts, in order of arrival. */
	readonly log: ServedRequest[];
	/** URL path -> fault applied to its downloads (whole, or resumed from a byte) while set. */
	readonly faults: Map<string, Fault>;
	/** While true the Hub and its CDN answer every request 503 (a visit with no network). */
	hubDown: boolean;
	close(): Promise<void>;
}

async function isFile(path: string): Promise<boolean> {
	try {
		return (await stat(path)).isFile();
	} catch {
		return false;
	}
}

/** The file under `dir` for `rest` (a path relative to it), or undefined if it escapes. */
function inside(dir: string, rest: string): string | undefined {
	const file = normalize(join(dir, rest));
	return file === dir || file.startsWith(dir + sep) ? file : undefined;
}

async function serveMounted(
	file: string | undefined,
	req: IncomingMessage,
	res: ServerResponse,
	entry: Omit<ServedRequest, 'status'>,
	log: ServedRequest[],
	faults: Map<string, Fault>,
	extraHeaders: Record<string, string> = {}
): Promise<void> {
	const fault = faults.get(entry.path);
	const answer = (status: number) => log.push({ ...entry, status });
	if (!file || !(await isFile(file))) {
		answer(404);
		res.writeHead(404, { 'content-type': 'text/plain', ...extraHeaders }).end('Entry not found');
		return;
	}
	const body = await readFile(file);
	// no-store: the browser's HTTP cache must not answer for the page's own model cache.
	const headers = {
		'content-type': 'application/octet-stream',
		'cache-control': 'no-store',
		'accept-ranges': 'bytes',
		...extraHeaders
	};
	const range = req.headers.range?.match(/^bytes=(\d+)-(\d*)$/);
	let part: Buffer = body;
	let head: Record<string, string> = headers;
	let status = 200;
	if (range && Number(range[1]) < body.length) {
		status = 206;
		const start = Number(range[1]);
		const end = Math.min(range[2] ? Number(range[2]) : body.length - 1, body.length - 1);
		part = body.subarray(start, end + 1);
		head = { ...headers, 'content-range': `bytes ${start}-${end}/${body.length}` };
	}
	answer(status);
	// a header probe (a closed range) comes whole; a download or a resume (bytes=N-) may not
	const download = !range || range[2] === '';
	const spoil = download ? fault : undefined;
	if (spoil === 'cut-once') faults.delete(entry.path);
	const half = part.subarray(0, part.length >> 1);
	if (spoil === 'cut' || spoil === 'cut-once') {
		res.writeHead(status, { ...head, 'content-length': String(part.length) });
		// the half reaches the client before the connection drops (a resume starts from it)
		res.write(half, () => setTimeout(() => res.destroy(), CUT_DELAY_MS));
	} else if (spoil === 'short') {
		res.writeHead(status, head);
		res.end(half);
	} else {
		res.writeHead(status, { ...head, 'content-length': String(part.length) });
		res.end(part);
	}
}

/** The Hub's answers (ServeOptions.hub): preflight, redirect of weights to the CDN path, files. */
async function serveHub(
	dir: string,
	pathname: string,
	req: IncomingMessage,
	res: ServerResponse,
	log: ServedRequest[],
	faults: Map<string, Fault>
): Promise<void> {
	const entry = { path: pathname, range: req.headers.range };
	if (req.method === 'OPTIONS') {
		log.push({ ...entry, status: 204 });
		res.writeHead(204, {
			...CORS_HEADERS,
			'access-control-allow-methods': 'GET, HEAD, OPTIONS',
			'access-control-allow-headers': 'range, authorization, content-type',
			'access-control-max-age': '600'
		});
		res.end();
		return;
	}
	const repoFile = pathname.startsWith(HUB_CDN_PATH)
		? pathname.slice(HUB_CDN_PATH.length).match(/^([^/]+)\/([^/]+)$/)
		: pathname.slice(HUB_PATH.length).match(/^([^/]+)\/resolve\/main\/([^/]+)$/);
	if (repoFile && pathname.startsWith(HUB_PATH) && repoFile[2].endsWith('.safetensors')) {
		log.push({ ...entry, status: 302 });
		res.writeHead(302, {
			...CORS_HEADERS,
			location: `${HUB_CDN_PATH}${repoFile[1]}/${repoFile[2]}`
		});
		res.end();
		return;
	}
	const file = repoFile ? inside(dir, `${repoFile[1]}/${repoFile[2]}`) : undefined;
	await serveMounted(file, req, res, entry, log, faults, CORS_HEADERS);
}

/** Serves `root` on 127.0.0.1 (and `options.mounts`); `port` 0 picks a free one. */
export async function serveStatic(
	root: string,
	port = 0,
	options: ServeOptions = {}
): Promise<StaticServer> {
	const base = resolve(root);
	const mounts = Object.entries(options.mounts ?? {}).map(
		([prefix, dir]) => [prefix, resolve(dir)] as const
	);
	const log: ServedRequest[] = [];
	const faults = new Map<string, Fault>();
	const hub = options.hub ? resolve(options.hub) : undefined;
	// (url and close once listening)
	const served: StaticServer = { url: '', log, faults, hubDown: false, close: async () => {} };
	const server: Server = createServer(async (req, res) => {
		let pathname: string;
		try {
			pathname = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
		} catch {
			res.writeHead(400).end(); // '//x' or a malformed escape: not a path (and not a crash)
			return;
		}
		if (hub && (pathname.startsWith(HUB_PATH) || pathname.startsWith(HUB_CDN_PATH))) {
			if (served.hubDown) {
				log.push({ path: pathname, range: req.headers.range, status: 503 });
				res.writeHead(503, CORS_HEADERS).end();
				return;
			}
			await serveHub(hub, pathname, req, res, log, faults);
			return;
		}
		const mount = mounts.find(([prefix]) => pathname.startsWith(prefix));
		if (mount) {
			const [prefix, dir] = mount;
			const entry = { path: pathname, range: req.headers.range };
			const file = inside(dir, pathname.slice(prefix.length));
			await serveMounted(file, req, res, entry, log, faults);
			return;
		}
		let file = normalize(join(base, pathname));
		if (file !== base && !file.startsWith(base + sep)) {
			res.writeHead(403).end('forbidden');
			return;
		}
		if (!(await isFile(file))) {
			const index = join(file, 'index.html');
			file = (await isFile(index)) ? index : join(base, '200.html');
		}
		if (!(await isFile(file))) {
			res.writeHead(404).end('not found');
			return;
		}
		res.writeHead(200, {
			'content-type': TYPES[extname(file)] ?? 'application/octet-stream',
			'cache-control': 'no-store'
		});
		createReadStream(file).pipe(res);
	});
	await new Promise<void>((ok, fail) => {
		server.once('error', fail);
		server.listen(port, '127.0.0.1', ok);
	});
	const address = server.address();
	if (!address || typeof address === 'string') throw new Error('server has no port');
	Object.assign(served, {
		url: `http://127.0.0.1:${address.port}/`,
		close: () =>
			new Promise<void>((ok) => {
				server.close(() => ok());
				server.closeAllConnections();
			})
	});
	return served;
}
