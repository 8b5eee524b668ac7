/**
 * @file Node only: the ChatService as an OpenAI-compatible HTTP server with node:http
 * alone, plus `GET /health`; every other route and error is the service's, so it answers as
 * the in-process client does. Before the service: http-access.ts and http-body.ts. After
 * it: a stream is written as fast as the client reads (a client reading nothing for
 * WRITE_STALL_MS is cut off); a client gone mid-stream stops its sequences.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { OpenAIApiError } from '../errors';
import { checkAccess } from './http-access';
import { bodyLimitFor, readBody, refuseAndClose } from './http-body';
import type { ChatService } from '../service';

/** Longest a stream waits for a client that reads nothing before it is cut off. */
const WRITE_STALL_MS = 60_000;
/**
 * How long an idle keep-alive connection stays open (Node's default is 5 s). The idle timer
 * runs before pending input is read, so when the event loop stalls (a kernel compiles) past
 * it, a request the client already sent on that connection is reset (ECONNRESET). Clients
 * close a second before the advertised `Keep-Alive: timeout=65`, so the race needs a stall
 * at that edge instead of any stall near 5 s.
 */
const KEEP_ALIVE_MS = 65_000;

export interface ListenOptions {
	/** 0 picks a free port. */
	port: number;
	/** Default 127.0.0.1 (loopback only). */
	host?: string;
	/** Host header names accepted besides loopback names, IP literals and `host`. */
	allowedHosts?: readonly string[];
	/** Required as `Authorization: Bearer KEY` when set. */
	apiKey?: string;
	/** Largest body read (default: bodyLimitFor(the service's context)). */
	maxBodyBytes?: number;
}

export interface ChatHttpServer {
	server: Server;
	/** e.g. http://127.0.0.1:8000 */
	url: string;
	close(): Promise<void>;
}

function sendJson(
	res: ServerResponse,
	status: number,
	json: unknown,
	headers: Record<string, string> = {}
): void {
	const body = JSON.stringify(json);
	res.writeHead(status, {
		'content-type': 'application/json',
		'content-length': Buffer.byteLength(body),
		// A failure here does not heal by retrying (the openai client obeys this header);
		// a 429 does, after its retry-after.
		...(status >= 400 && status !== 429 ? { 'x-should-retry': 'false' } : {}),
		...headers
	});
	res.end(body);
}

/** Resolves when the socket's buffer has drained; false if the response closed or stalled. */
function drained(res: ServerResponse): Promise<boolean> {
	return new Promise((resolve) => {
		const done = (ok: boolean) => {
			clearTimeout(timer);
			res.off('drain', onDrain);
			res.off('close', onClose);
			resolve(ok);
		};
		const onDrain = () => done(true);
		const onClose = () => done(false);
		const timer = setTimeout(() => done(false), WRITE_STALL_MS);
		res.on('drain', onDrain);
		res.on('close', onClose);
	});
}

/** Writes SSE frames, pulling the next only once the socket takes more (backpressure). */
export async function writeStream(
	res: ServerResponse,
	frames: AsyncIterable<string>,
	abort: AbortSignal
) {
	res.writeHead(200, {
		'content-type': 'text/event-stream',
		'cache-control': 'no-cache',
		connection: 'keep-alive'
	});
	for await (const frame of frames) {
		if (abort.aborted) break;
		if (!res.write(frame) && !(await drained(res))) {
			res.destroy();
			return;
		}
	}
	res.end();
}

async function handle(
	service: ChatService,
	options: ListenOptions,
	req: IncomingMessage,
	res: ServerResponse
) {
	const refused = checkAccess(req, {
		boundHost: options.host ?? '127.0.0.1',
		allowedHosts: options.allowedHosts,
		apiKey: options.apiKey
	});
	if (refused) return refuseAndClose(req, res, refused);
	if (req.method === 'GET' && new URL(req.url ?? '/', 'http://localhost').pathname === '/health')
		return sendJson(res, 200, { status: 'ok' });
	const abort = new AbortController();
	// 'close' on the response before it finished: the client went away.
	res.on('close', () => {
		if (!res.writableFinished) abort.abort(new Error('client disconnected'));
	});
	let body: string | undefined;
	if (req.method !== 'GET' && req.method !== 'HEAD') {
		try {
			body = await readBody(req, options.maxBodyBytes ?? bodyLimitFor(service.contextLength));
		} catch (error) {
			if (error instanceof OpenAIApiError) return refuseAndClose(req, res, error);
			throw error;
		}
	}
	const path = new URL(req.url ?? '/', 'http://localhost').pathname;
	const r = await service.handle({ method: req.method ?? 'GET', path, body, signal: abort.signal });
	if ('sse' in r) return writeStream(res, r.sse, abort.signal);
	sendJson(res, r.status, r.json, r.headers);
}

/** Starts the server; resolves once it listens. */
export function listenChatServer(
	service: ChatService,
	options: ListenOptions
): Promise<ChatHttpServer> {
	const { port, host = '127.0.0.1' } = options;
	const server = createServer((req, res) => {
		handle(service, { ...options, host }, req, res).catch((error: unknown) => {
			// A bug, not a request problem (the service turns those into answers).
			if (!res.headersSent)
				sendJson(res, 500, {
					error: { message: String(error), type: 'server_error', param: null, code: null }
				});
			else res.destroy();
		});
	});
	server.keepAliveTimeout = KEEP_ALIVE_MS;
	return new Promise((resolve, reject) => {
		server.once('error', reject);
		server.listen(port, host, () => {
			server.off('error', reject);
			const { port: actual } = server.address() as AddressInfo;
			const shown = host.includes(':') ? `[${host}]` : host;
			resolve({
				server,
				url: `http://${shown}:${actual}`,
				close: () =>
					new Promise<void>((done, fail) => {
						server.close((e) => (e ? fail(e) : done()));
						server.closeAllConnections();
					})
			});
		});
	});
}
