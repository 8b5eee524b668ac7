/**
 * @file A request body read under a size limit that follows the model's context
 * (`bodyLimitFor`: BYTES_PER_TOKEN a token, between a floor and a cap), 413 beyond. A
 * refusal is written whole, then the rest of the body is drained before the socket closes:
 * closing with unread input sends RST, and an uploading client would see ECONNRESET
 * instead of the reply. The drain goes on while the body keeps coming: a client is cut off
 * when it goes quiet (DRAIN.quietTicks ticks of DRAIN.tickMs without data) or sends more than
 * DRAIN.maxBytes. Ticks, not a deadline: an event loop stalled for seconds (a kernel compile)
 * delays the client's data and the timer alike, and a late tick counts once.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { OpenAIApiError, type OpenAIErrorBody } from '../errors';

/** Body bytes allowed per context token. */
const BYTES_PER_TOKEN = 16;
/** The least limit, whatever the context (1 MiB). */
const MIN_BODY_BYTES = 1 << 20;
/** The most, whatever the context (16 MiB). */
const MAX_BODY_BYTES = 1 << 24;
/** How a refused body is drained: quiet for 20 ticks of 250 ms (5 s), or past 64 MiB, ends it. */
export interface DrainLimits {
	tickMs: number;
	quietTicks: number;
	maxBytes: number;
}
const DRAIN: DrainLimits = { tickMs: 250, quietTicks: 20, maxBytes: 4 * MAX_BODY_BYTES };

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
	error: OpenAIApiError,
	limits: DrainLimits = DRAIN
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
		clearInterval(ticker);
		res.end();
	};
	const cutOff = () => {
		end();
		req.socket.destroy();
	};
	let quiet = 0;
	let drained = 0;
	const ticker = setInterval(() => {
		if (++quiet >= limits.quietTicks) cutOff();
	}, limits.tickMs);
	if (req.complete) return end();
	req.on('data', (part: Buffer) => {
		quiet = 0;
		drained += part.length;
		if (drained > limits.maxBytes) cutOff();
	});
	req.on('end', end);
	req.on('error', end);
	req.on('close', end);
	req.resume();
}
