/**
 * @file A tiny static file server for the built site (`build/`), for the e2e test: node:http
 * only, bound to 127.0.0.1 (a secure context, which WebGPU requires), on a free port.
 * Unknown paths get the SPA fallback `200.html`, as a static host would serve it.
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
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

export interface StaticServer {
	url: string;
	close(): Promise<void>;
}

async function isFile(path: string): Promise<boolean> {
	try {
		return (await stat(path)).isFile();
	} catch {
		return false;
	}
}

/** Serves `root` on 127.0.0.1; `port` 0 picks a free one. */
export async function serveStatic(root: string, port = 0): Promise<StaticServer> {
	const base = resolve(root);
	const server: Server = createServer(async (req, res) => {
		const pathname = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
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
	return {
		url: `http://127.0.0.1:${address.port}/`,
		close: () => new Promise<void>((ok) => server.close(() => ok()))
	};
}
