/**
 * @file A request body read under a size limit that follows the model's context
 * (`bodyLimitFor`: BYTES_PER_TOKEN a token, between a floor and a cap), 413 beyond. A
 * refusal is written whole, then the rest of the body is drained before the socket closes:
 * closing with unread input sends RST, and an uploading client would see ECONNRESET
 * instead of the reply. A client still sending after DRAIN_MS is cut off.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { OpenAIApiError, type OpenAIErrorBody } from '../errors';

/** Body bytes allowed per context token. */
const BYTES_PER_TOKEN = 16;
/** The least limit, whatever the context (1 MiB). */
const MIN_BODY_BYTES = 1 << 20;
/** The most, whatever the context (16 MiB). */
const MAX_BODY_BYTES = 1 << 24;
/** Longest a refused body is read and dropped before the socket is closed anyway. */
const DRAIN_MS = 5000;

/** The body limit for a model of `contextLength` tokens. */
export function bodyLimitFor(contextLength: number): number {
	return Math.min(MAX_BODY_BYTES, Math.max(MIN_BODY_BYTES, BYTES_PER_TOKEN * contextLength));
}

export class BodyTooLargeError extends OpenAIApiError {
	constructor(readonly limit: number) {
		super(
			413,
			`The request body is over this server's limit of ${limit} bytes (${BYTES_PER_TOKEN} bytes ` +
				"per token of the model's context).",
			'invalid_request_error',
			null,
			'request_too_large'
		);
		this.name = 'BodyTooLargeError';
	}
}

/** The body as text; rejects with BodyTooLargeError past `limit` (what came stays unread). */
export function readBody(req: IncomingMessage, limit: number): Promise<string> {
	return new Promise((resolve, reject) => {
		const declared = Number(req.headers['content-length']);
		if (Number.isFinite(declared) && declared > limit) return reject(new BodyTooLargeError(limit));
		const parts: Buffer[] = [];
		let size = 0;
		const onData = (part: Buffer) => {
			size += part.length;
			if (size <= limit) return void parts.push(part);
			req.off('data', onData);
			req.pause();
			parts.length = 0;
			reject(new BodyTooLargeError(limit));
		};
		req.on('data', onData);
		req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
		req.on('error', reject);
	});
}

/**
 * Answers `error` and closes the connection without losing the answer: the reply is
 * written, what the client still sends is read and dropped, then the response ends.
 */
export function refuseAndClose(
	req: IncomingMessage,
	res: ServerResponse,
	error: OpenAIApiError
): void {
	const body = JSON.stringify(error.toBody() satisfies OpenAIErrorBody);
	res.writeHead(error.status, {
		'content-type': 'application/json',
		'content-length': Buffer.byteLength(body),
		'x-should-retry': 'false',
		connection: 'close'
	});
	res.write(body);
	let ended = false;
	const end = () => {
		if (ended) return;
		ended = true;
		clearTimeout(timer);
		res.end();
	};
	const timer = setTimeout(() => {
		end();
		req.socket.destroy();
	}, DRAIN_MS);
	if (req.complete) return end();
	req.on('end', end);
	req.on('error', end);
	req.on('close', end);
	req.resume();
}
