/**
 * @file Node only (imports node:http): the ChatService as an OpenAI-compatible HTTP
 * server, `POST /v1/chat/completions` (streamed as server-sent events when asked) and
 * `GET /v1/models`, with node:http alone. Every route and error is the service's
 * (service.ts), so this server and the in-process client answer alike. A client that
 * disconnects mid-stream has its sequences stopped. The browser never imports this file.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { OpenAIApiError } from './errors';
import type { ChatService } from './service';

/** Largest request body read (a long chat is well under this; more is refused with 413). */
const MAX_BODY_BYTES = 32 * 1024 * 1024;

export interface ListenOptions {
	/** 0 picks a free port. */
	port: number;
	/** Default 127.0.0.1 (loopback only). */
	host?: string;
}

export interface ChatHttpServer {
	server: Server;
	/** e.g. http://127.0.0.1:8000 */
	url: string;
	close(): Promise<void>;
}

function readBody(req: IncomingMessage): Promise<string> {
	return new Promise((resolve, reject) => {
		const parts: Buffer[] = [];
		let size = 0;
		req.on('data', (part: Buffer) => {
			size += part.length;
			if (size > MAX_BODY_BYTES) {
				reject(
					new OpenAIApiError(
						413,
						`The request body is over ${MAX_BODY_BYTES} bytes.`,
						'invalid_request_error',
						null,
						'request_too_large'
					)
				);
				req.destroy();
			} else parts.push(part);
		});
		req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
		req.on('error', reject);
	});
}

function sendJson(res: ServerResponse, status: number, json: unknown): void {
	const body = JSON.stringify(json);
	res.writeHead(status, {
		'content-type': 'application/json',
		'content-length': Buffer.byteLength(body),
		// A failure here does not heal by retrying; the openai client obeys this header.
		...(status >= 400 ? { 'x-should-retry': 'false' } : {})
	});
	res.end(body);
}

async function handle(service: ChatService, req: IncomingMessage, res: ServerResponse) {
	const abort = new AbortController();
	// 'close' on the response before it finished: the client went away.
	res.on('close', () => {
		if (!res.writableFinished) abort.abort(new Error('client disconnected'));
	});
	let body: string | undefined;
	if (req.method !== 'GET' && req.method !== 'HEAD') {
		try {
			body = await readBody(req);
		} catch (error) {
			if (error instanceof OpenAIApiError) return sendJson(res, error.status, error.toBody());
			throw error;
		}
	}
	const path = new URL(req.url ?? '/', 'http://localhost').pathname;
	const r = await service.handle({ method: req.method ?? 'GET', path, body, signal: abort.signal });
	if (!('sse' in r)) return sendJson(res, r.status, r.json);
	res.writeHead(200, {
		'content-type': 'text/event-stream',
		'cache-control': 'no-cache',
		connection: 'keep-alive'
	});
	for await (const frame of r.sse) {
		if (abort.signal.aborted) break;
		res.write(frame);
	}
	res.end();
}

/** Starts the server; resolves once it listens. */
export function listenChatServer(
	service: ChatService,
	{ port, host = '127.0.0.1' }: ListenOptions
): Promise<ChatHttpServer> {
	const server = createServer((req, res) => {
		handle(service, req, res).catch((error: unknown) => {
			// A bug, not a request problem (the service turns those into answers).
			if (!res.headersSent)
				sendJson(res, 500, {
					error: { message: String(error), type: 'server_error', param: null, code: null }
				});
			else res.destroy();
		});
	});
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
