/**
 * @file The OpenAI-compatible chat service over a local engine, transport-free: the
 * in-process fetch (client.ts) and the Node HTTP server both go through `handle`, so they
 * answer alike. Routes POST /v1/chat/completions, POST /v1/responses and GET /v1/models[/{id}];
 * decoding is service-decode.ts's. A server's limits: `admission` caps requests and tokens
 * held (429 with Retry-After), `deadlineMs` stops a longer request (504, or an error frame
 * in a stream). Streams follow OpenAI's chunk order; tool calls arrive whole, one delta each.
 */
import type { AdmissionTicket } from './admission';
import {
	DeadlineError,
	OpenAIApiError,
	OverloadedError,
	toApiError,
	invalidRequest
} from './errors';
import type { TabrlChatCompletion, TabrlChatCompletionChunk } from './response';
import {
	toResponsesError,
	translateResponsesRequest,
	type ResponsesExtras
} from './responses-request';
import { ChatDecoding, type Prepared } from './service-decode';
import type { ServiceRequest, ServiceResponse } from './service-options';
import { responseEventFrames, sseFrames } from './sse';
import { withoutTrailingSlash } from '../util/location';

/** A request's signal with the service's deadline added (the outer one as is without). */
interface Deadline {
	signal: AbortSignal | undefined;
	/** Stops the timer (the request ended). */
	clear(): void;
}

function withDeadline(outer: AbortSignal | undefined, ms: number | undefined): Deadline {
	if (ms === undefined) return { signal: outer, clear: () => {} };
	const controller = new AbortController();
	const timer = setTimeout(() => controller.abort(new DeadlineError(ms)), ms);
	const onOuter = () => controller.abort(outer!.reason);
	if (outer?.aborted) onOuter();
	else outer?.addEventListener('abort', onOuter, { once: true });
	return {
		signal: controller.signal,
		clear: () => {
			clearTimeout(timer);
			outer?.removeEventListener('abort', onOuter);
		}
	};
}

export class ChatService extends ChatDecoding {
	/** A whole chat.completion (request.stream is ignored). */
	async createCompletion(body: unknown, signal?: AbortSignal): Promise<TabrlChatCompletion> {
		return this.complete(await this.prepare(body, signal), signal);
	}

	/**
	 * The chunks of a streamed completion. Validation errors throw here, before the first
	 * chunk; an engine error after that ends the iteration with that error.
	 */
	async streamCompletion(
		body: unknown,
		signal?: AbortSignal
	): Promise<AsyncIterable<TabrlChatCompletionChunk>> {
		return this.stream(await this.prepare(body, signal), signal);
	}

	/** Routes one request: POST /v1/chat/completions, POST /v1/responses, GET /v1/models[/{id}]. */
	async handle(req: ServiceRequest): Promise<ServiceResponse> {
		try {
			return await this.route(req);
		} catch (error) {
			const e = toApiError(error);
			if (e instanceof OverloadedError)
				return {
					status: e.status,
					json: e.toBody(),
					headers: { 'retry-after': String(e.retryAfterSeconds) }
				};
			return { status: e.status, json: e.toBody() };
		}
	}

	/**
	 * One decoding request under the service's limits: a request slot, then the prompt,
	 * then its tokens booked, then `run`, all within the deadline; the slot is freed when
	 * the answer is whole (for a stream: when decoding ends). `toChat` turns another
	 * route's body into a chat-completions body (the Responses API: responses-request.ts).
	 */
	private async admitted(
		req: ServiceRequest,
		toChat: (body: unknown) => unknown,
		run: (
			p: Prepared,
			signal: AbortSignal | undefined,
			ended: () => void
		) => Promise<ServiceResponse>
	): Promise<ServiceResponse> {
		const ticket: AdmissionTicket | undefined = this.admission?.enter();
		const deadline = withDeadline(req.signal, this.options.deadlineMs);
		let once = false;
		const ended = () => {
			if (once) return;
			once = true;
			ticket?.release();
			deadline.clear();
		};
		try {
			const body = req.json !== undefined ? req.json : parseJsonBody(req.body);
			const p = await this.prepare(toChat(body), deadline.signal);
			ticket?.book(p.request.n * (p.promptIds.length + p.maxTokens));
			return await run(p, deadline.signal, ended);
		} catch (error) {
			ended();
			throw error;
		}
	}

	private async route(req: ServiceRequest): Promise<ServiceResponse> {
		const path = withoutTrailingSlash(req.path);
		const method = req.method.toUpperCase();
		const allow = (m: string) => {
			if (method !== m)
				throw new OpenAIApiError(
					405,
					`Method ${method} is not allowed on ${path}; use ${m}.`,
					'invalid_request_error',
					null,
					'method_not_allowed'
				);
		};
		if (path === '/v1/chat/completions') {
			allow('POST');
			return this.admitted(
				req,
				(body) => body,
				async (p, signal, ended) => {
					if (p.request.stream)
						return { status: 200, sse: sseFrames(this.stream(p, signal, ended)) };
					try {
						return { status: 200, json: await this.complete(p, signal) };
					} finally {
						ended();
					}
				}
			);
		}
		if (path === '/v1/responses') {
			allow('POST');
			let extras: ResponsesExtras;
			const toChat = (body: unknown) => {
				const t = translateResponsesRequest(body, (id) => this.items.get(id));
				extras = t.extras;
				return t.chat;
			};
			return this.admitted(req, toChat, async (p, signal, ended) => {
				if (p.request.stream)
					return {
						status: 200,
						sse: responseEventFrames(this.streamResponse(p, extras, signal, ended))
					};
				try {
					return { status: 200, json: await this.respond(p, extras, signal) };
				} finally {
					ended();
				}
			}).catch((error: unknown) => {
				throw toResponsesError(error);
			});
		}
		if (path === '/v1/models') {
			allow('GET');
			return { status: 200, json: this.listModels() };
		}
		if (path.startsWith('/v1/models/')) {
			allow('GET');
			const id = decodePathPart(path.slice('/v1/models/'.length));
			const model = this.listModels().data.find((m) => m.id === id);
			if (!model)
				throw new OpenAIApiError(
					404,
					`The model \`${id}\` does not exist. This server serves \`${this.model}\`.`,
					'invalid_request_error',
					'model',
					'model_not_found'
				);
			return { status: 200, json: model };
		}
		throw new OpenAIApiError(
			404,
			`Invalid URL (${method} ${req.path}): this server answers POST /v1/chat/completions, POST /v1/responses and GET /v1/models.`,
			'invalid_request_error',
			null,
			'unknown_url'
		);
	}
}

/** A percent-encoded path segment; malformed encoding (`%ZZ`) is the caller's 400. */
function decodePathPart(part: string): string {
	try {
		return decodeURIComponent(part);
	} catch {
		throw invalidRequest(
			`Invalid URL: '${part}' is not valid percent-encoding.`,
			null,
			'invalid_url'
		);
	}
}

function parseJsonBody(body: string | undefined): unknown {
	if (body === undefined || body.trim() === '')
		throw invalidRequest('The request has no body: send a JSON object.', null, 'invalid_json');
	try {
		return JSON.parse(body);
	} catch (error) {
		throw invalidRequest(
			`We could not parse the JSON body of your request (${(error as Error).message}). ` +
				'Send valid JSON with Content-Type: application/json.',
			null,
			'invalid_json'
		);
	}
}
