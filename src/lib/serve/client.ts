/**
 * @file `openaiClient()`: the official `openai` client with its `fetch` replaced by
 * `localFetch`, which hands each request to a ChatService in this process (tab or Node), so
 * agent code is ordinary OpenAI-client code and errors are the client's own APIError
 * subclasses. A whole chat completion skips the HTTP framing (direct-completions.ts). No
 * retries by default (maxRetries 0); a placeholder key (nothing checks it).
 */
import OpenAI, { type ClientOptions } from 'openai';
import { ChatService } from './service';
import { directCreate } from './direct-completions';
import type { ChatServiceOptions, ServiceRequest } from './service-options';

/** The origin the client is pointed at; nothing listens there, requests stay in process. */
export const LOCAL_BASE_URL = 'http://tabrl.local/v1';

/** A local answer: JSON, or (200 only) SSE frames as an async iterable or a stream. */
export type LocalReply =
	| { status: number; json: unknown }
	| { status: 200; sse: AsyncIterable<string> | ReadableStream<string> };

/** Answers one request in process (a ChatService, or a backend across a worker). */
export type LocalHandler = (request: ServiceRequest) => Promise<LocalReply>;

/**
 * SSE frames as a stream of strings; cancelling it (the reader went away: a `break` out of
 * the client's stream) aborts `abort`, which stops the decode, and ends the source.
 */
export function frameStream(
	frames: AsyncIterable<string> | ReadableStream<string>,
	abort: AbortController
): ReadableStream<string> {
	let next: () => Promise<IteratorResult<string>>;
	let stop: (reason: unknown) => Promise<unknown>;
	if (frames instanceof ReadableStream) {
		const reader = frames.getReader();
		next = async () => {
			const r = await reader.read();
			return r.done ? { done: true, value: undefined } : { done: false, value: r.value };
		};
		stop = (reason) => reader.cancel(reason);
	} else {
		const iterator = frames[Symbol.asyncIterator]();
		next = () => iterator.next();
		stop = async () => iterator.return?.();
	}
	return new ReadableStream<string>({
		async pull(controller) {
			const { value, done } = await next();
			if (done) controller.close();
			else controller.enqueue(value);
		},
		async cancel(reason) {
			abort.abort();
			await stop(reason);
		}
	});
}

function toResponse(r: LocalReply, abort: AbortController): Response {
	if ('sse' in r)
		return new Response(frameStream(r.sse, abort).pipeThrough(new TextEncoderStream()), {
			status: 200,
			headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' }
		});
	return new Response(JSON.stringify(r.json), {
		status: r.status,
		// A server-side failure is not worth retrying: say so (the client obeys this header).
		headers: { 'content-type': 'application/json', 'x-should-retry': 'false' }
	});
}

async function bodyText(input: RequestInfo | URL, init?: RequestInit): Promise<string | undefined> {
	const body = init?.body;
	if (typeof body === 'string') return body;
	if (body !== undefined && body !== null) return new Response(body).text();
	if (input instanceof Request) return input.text();
	return undefined;
}

/** A ChatService as a handler (a handler as is). */
function localHandler(service: ChatService | LocalHandler): LocalHandler {
	return typeof service === 'function' ? service : (request) => service.handle(request);
}

/** A `fetch` that answers from `service` (or any local handler) in this process. */
export function localFetch(service: ChatService | LocalHandler): typeof fetch {
	const handle = localHandler(service);
	return async (input, init) => {
		const url = new URL(
			typeof input === 'string' ? input : input instanceof URL ? input.href : input.url
		);
		const method = init?.method ?? (input instanceof Request ? input.method : 'GET');
		// One controller per request: the caller's signal, or the body stream being dropped.
		const abort = new AbortController();
		const outer = init?.signal ?? (input instanceof Request ? input.signal : undefined);
		if (outer?.aborted) throw outer.reason;
		outer?.addEventListener('abort', () => abort.abort(outer.reason), { once: true });
		const response = await handle({
			method,
			path: url.pathname,
			body: await bodyText(input, init),
			signal: abort.signal
		});
		return toResponse(response, abort);
	};
}

export type OpenAIClientOptions =
	ChatServiceOptions | { service: ChatService } | { handler: LocalHandler };

/** The client's own options that still apply to a local client (timeout, headers, ...). */
export type LocalClientOptions = Omit<
	ClientOptions,
	'apiKey' | 'baseURL' | 'fetch' | 'dangerouslyAllowBrowser'
>;

/**
 * The local client's request timeout: the longest a timer takes (~24.8 days), not the
 * package's 10 minutes. A request waits in the engine's queue behind the whole batch, which
 * on a software GPU takes longer than that (200 games of tic-tac-toe); nothing is remote to
 * wait for. A caller that wants a limit passes `timeout` or a signal.
 */
export const LOCAL_TIMEOUT_MS = 2 ** 31 - 1;

/**
 * An `openai` client whose requests the local engine serves. Give the engine options (a
 * new ChatService is made) or a ChatService to share one scheduler between clients.
 */
export function openaiClient(
	options: OpenAIClientOptions,
	clientOptions: LocalClientOptions = {}
): OpenAI {
	const target =
		'handler' in options
			? options.handler
			: 'service' in options
				? options.service
				: new ChatService(options);
	const client = new OpenAI({
		maxRetries: 0,
		timeout: LOCAL_TIMEOUT_MS,
		...clientOptions,
		apiKey: 'tabrl-local',
		baseURL: LOCAL_BASE_URL,
		fetch: localFetch(target),
		dangerouslyAllowBrowser: true
	});
	const completions = client.chat.completions;
	completions.create = directCreate(
		completions.create.bind(completions),
		localHandler(target),
		client.timeout,
		LOCAL_TIMEOUT_MS
	);
	return client;
}
