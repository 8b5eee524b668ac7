/**
 * @file The OpenAI-compatible chat service over a local engine: validates a request
 * (request.ts), builds its prompt (prompt.ts), decodes its n choices through the batching
 * scheduler (scheduler.ts) with one ChoiceDecoder each (choice.ts), and answers with
 * OpenAI's objects (response.ts): a whole `chat.completion`, or `chat.completion.chunk`s.
 * Transport-free: the in-process fetch (client.ts) and the Node HTTP server
 * (http-server.ts) both go through `handle`, so they answer alike.
 *
 * Streaming follows OpenAI: a first chunk per choice with `{role: 'assistant', content: ''}`,
 * then a chunk per token that adds text, tool calls or (when asked) logprobs, then a chunk
 * per choice with an empty delta and its finish_reason (and TabRL's `tabrl` tokens), then,
 * with stream_options.include_usage, one chunk with no choices and the usage; the SSE
 * stream ends with `data: [DONE]`. Tool calls arrive whole, one delta each (OpenAI may
 * split arguments over several deltas; clients that accumulate deltas see the same).
 *
 * Limits a server sets (cli serve; the in-process client sets none): `admission` caps the
 * requests held and their tokens (admission.ts: 429 with Retry-After beyond), `deadlineMs`
 * stops a request that runs longer (504, or an error frame in a stream). Prompts are
 * tokenized part by part with yields (prompt.ts encodePrompt), a long message's text on
 * `pieceEncoder`'s thread (cli serve: src/lib/model/tokenizer/node/tokenizer-thread.ts), so one long prompt
 * does not hold up the others' answers; the deadline or the client leaving stops that work.
 */
import type { ChatEngine, EngineSequence } from './engine';
import type { VocabularySource } from '../model/constrain/vocabulary';
import type { TokenGrammar } from '../model/constrain/token-mask';
import { ChoiceDecoder, type ChoiceDelta, type TextDecoding } from './choice';
import { RequestGrammars } from './constraint';
import { Admission, type AdmissionLimits, type AdmissionTicket } from './admission';
import {
	DeadlineError,
	OpenAIApiError,
	OverloadedError,
	toApiError,
	invalidRequest
} from './errors';
import { encodePrompt, type ChatEncoding, type PieceEncoder } from './prompt';
import {
	DEFAULT_LIMITS,
	parseChatCompletionRequest,
	type ChatRequest,
	type RequestLimits
} from './request';
import {
	buildChoice,
	buildChunk,
	buildCompletion,
	buildModelList,
	buildUsage,
	newCompletionMeta,
	toOpenAIToolCalls,
	type CompletionMeta,
	type FinishReason,
	type TabrlChatCompletion,
	type TabrlChatCompletionChunk,
	type TabrlChoiceTokens,
	type TabrlChunkChoice
} from './response';
import { BatchScheduler, type SchedulerOptions } from './scheduler';
import type { ResponseStreamEvent } from 'openai/resources/responses/responses';
import {
	toResponsesError,
	translateResponsesRequest,
	type ResponsesExtras
} from './responses-request';
import { ResponseAssembler, responsesUsage, type TabrlResponse } from './responses-output';
import { OutputItemMemory } from './responses-items';

/** What the service needs of a Tokenizer (src/lib/model/tokenizer/tokenizer.ts satisfies it); the
 * vocabulary is needed only for constrained requests (response_format, tool_choice). */
export type ServiceTokenizer = ChatEncoding & TextDecoding & Partial<VocabularySource>;

export interface ChatServiceOptions {
	engine: ChatEngine;
	tokenizer: ServiceTokenizer;
	/** The model name requests must give (and GET /v1/models lists). */
	model: string;
	/** Prompt + new tokens at most (default and cap: the engine's contextLength). */
	contextLength?: number;
	limits?: RequestLimits;
	scheduler?: SchedulerOptions;
	/** Caps on requests and tokens held at once (default: none). */
	admission?: AdmissionLimits;
	/** Longest a request may take, from arrival to its last token (default: none). */
	deadlineMs?: number;
	/** Tokenizes a prompt's long pieces off the event loop (default: none, all inline). The
	 * caller owns it (closes it with its server). */
	pieceEncoder?: PieceEncoder;
	/**
	 * Whether each choice carries TabRL's `tabrl` token record (default true: the in-process
	 * clients train on it). A server for other clients sends none: they ask for vLLM's
	 * `return_token_ids` instead.
	 */
	tokenRecords?: boolean;
}

/** A transport-free request: method, path (e.g. '/v1/models'), body text. */
export interface ServiceRequest {
	method: string;
	path: string;
	body?: string;
	signal?: AbortSignal;
}

/** A JSON answer (with extra headers, e.g. a 429's retry-after), or (200 only) a stream of
 * SSE frames (`data: ...\n\n`). */
export type ServiceResponse =
	| { status: number; json: unknown; headers?: Record<string, string> }
	| { status: 200; sse: AsyncIterable<string> };

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

/** A validated request ready to decode. */
interface Prepared {
	request: ChatRequest;
	promptIds: number[];
	maxTokens: number;
	meta: CompletionMeta;
	/** The reply's grammar (constrained decoding), or null. */
	grammar: TokenGrammar | null;
}

/** A small async queue: the engine's callbacks push, the stream's reader pulls. */
class ChunkQueue<T> {
	private items: T[] = [];
	private wake: (() => void) | null = null;
	private closed = false;
	private error: unknown = undefined;

	push(item: T): void {
		this.items.push(item);
		this.wake?.();
	}
	close(error?: unknown): void {
		this.closed = true;
		this.error = error;
		this.wake?.();
	}
	async *drain(): AsyncGenerator<T> {
		for (;;) {
			if (this.items.length) {
				yield this.items.shift()!;
				continue;
			}
			if (this.closed) {
				if (this.error !== undefined) throw this.error;
				return;
			}
			await new Promise<void>((resolve) => (this.wake = resolve));
			this.wake = null;
		}
	}
}

export class ChatService {
	readonly scheduler: BatchScheduler;
	readonly model: string;
	/** Grammars of constrained requests, per request shape. */
	private readonly grammars: RequestGrammars;
	/** The latest Responses output items, for item_reference inputs. */
	private readonly items = new OutputItemMemory();
	/** When the service started (GET /v1/models' `created`). */
	private readonly created = Math.floor(Date.now() / 1000);

	/** Prompt + new tokens at most. */
	readonly contextLength: number;
	/** The caps on requests and tokens held, when set. */
	readonly admission: Admission | null;

	constructor(private readonly options: ChatServiceOptions) {
		this.model = options.model;
		// The smaller of the two when both are known: the engine cannot go past its own.
		const context = Math.min(
			options.contextLength ?? Infinity,
			options.engine.contextLength ?? Infinity
		);
		if (!Number.isInteger(context) || context < 2)
			throw new RangeError(
				`ChatService: give contextLength (an integer >= 2; the engine says ${context})`
			);
		this.contextLength = context;
		this.scheduler = new BatchScheduler(options.engine, options.scheduler);
		this.grammars = new RequestGrammars(options.tokenizer);
		this.admission = options.admission ? new Admission(options.admission) : null;
	}

	listModels() {
		return buildModelList(this.model, this.created);
	}

	/** Validation, model check, prompt: everything that can fail before decoding; `signal`
	 * (the request's, with its deadline) stops tokenizing. */
	private async prepare(body: unknown, signal?: AbortSignal): Promise<Prepared> {
		const request = parseChatCompletionRequest(body, this.options.limits ?? DEFAULT_LIMITS);
		if (request.model !== this.model)
			throw new OpenAIApiError(
				404,
				`The model \`${request.model}\` does not exist. This server serves \`${this.model}\`.`,
				'invalid_request_error',
				'model',
				'model_not_found'
			);
		const prompt = await encodePrompt(this.options.tokenizer, request, this.contextLength, {
			pieceEncoder: this.options.pieceEncoder,
			signal
		});
		return {
			request,
			promptIds: prompt.ids,
			maxTokens: prompt.maxTokens,
			meta: newCompletionMeta(this.model),
			grammar: this.grammars.get(request)
		};
	}

	private decoders(p: Prepared): ChoiceDecoder[] {
		const parseTools = p.request.tools !== undefined && p.request.tools.length > 0;
		return Array.from(
			{ length: p.request.n },
			() =>
				new ChoiceDecoder(this.options.tokenizer, {
					stop: p.request.stop,
					parseTools,
					logprobs: p.request.logprobs,
					topLogprobs: p.request.logprobs ? p.request.topLogprobs : 0,
					tokensAsIds: p.request.tokensAsTokenIds
				})
		);
	}

	/** Decodes the n choices; `onDelta` sees every delta as it is made. */
	private async decode(
		p: Prepared,
		decoders: ChoiceDecoder[],
		signal: AbortSignal | undefined,
		onDelta?: (i: number, delta: ChoiceDelta) => void
	): Promise<EngineSequence[]> {
		const { request } = p;
		const results = await this.scheduler.submit({
			prompts: Array.from({ length: request.n }, () => p.promptIds),
			params: {
				temperature: request.temperature,
				topP: request.topP,
				topK: request.topK,
				seed: request.seed,
				maxTokens: p.maxTokens,
				topLogprobs: request.logprobs ? request.topLogprobs : 0
			},
			constraints: p.grammar ? decoders.map(() => p.grammar!.start()) : undefined,
			signal,
			onToken: (i, id, logprob, top) => {
				const delta = decoders[i].push(id, logprob, top);
				onDelta?.(i, delta);
				return decoders[i].stoppedByString;
			}
		});
		// Tokens the engine did not report step by step (if any), then the end of the text.
		results.forEach((r, i) => {
			const d = decoders[i];
			const seen = d.ids.length;
			const deltas = r.ids
				.slice(seen)
				.map((id, k) => d.push(id, r.logprobs[seen + k], r.topLogprobs?.[seen + k]));
			deltas.push(d.finish(r.finishReason === 'length'));
			for (const delta of deltas) onDelta?.(i, delta);
		});
		return results;
	}

	private finishReason(d: ChoiceDecoder, r: EngineSequence): FinishReason {
		if (d.stoppedByString) return d.calls.length ? 'tool_calls' : 'stop';
		if (r.finishReason === 'length') return 'length';
		return d.calls.length ? 'tool_calls' : 'stop';
	}

	private usage(p: Prepared, results: EngineSequence[]) {
		const completion = results.reduce((s, r) => s + r.ids.length, 0);
		return buildUsage(p.promptIds.length, completion);
	}

	private static tokens(r: EngineSequence, p: Prepared): TabrlChoiceTokens {
		const t: TabrlChoiceTokens = {
			prompt_ids: [...r.promptIds],
			ids: [...r.ids],
			logprobs: [...r.logprobs]
		};
		if (p.grammar) t.constrained = true;
		return t;
	}

	/** A whole chat.completion (request.stream is ignored). */
	async createCompletion(body: unknown, signal?: AbortSignal): Promise<TabrlChatCompletion> {
		return this.complete(await this.prepare(body, signal), signal);
	}

	private async complete(p: Prepared, signal?: AbortSignal): Promise<TabrlChatCompletion> {
		const decoders = this.decoders(p);
		const results = await this.decode(p, decoders, signal);
		const choices = results.map((r, i) => {
			const d = decoders[i];
			return this.forWire(
				buildChoice({
					index: i,
					content: d.content,
					toolCalls: toOpenAIToolCalls(d.calls),
					finishReason: this.finishReason(d, r),
					logprobs: p.request.logprobs ? d.logprobEntries : null,
					tabrl: ChatService.tokens(r, p),
					...(p.request.returnTokenIds ? { tokenIds: [...r.ids] } : {})
				})
			);
		});
		const completion = buildCompletion(p.meta, choices, this.usage(p, results));
		return p.request.returnTokenIds
			? { ...completion, prompt_token_ids: [...p.promptIds] }
			: completion;
	}

	/** A choice as this service sends it: without TabRL's record when tokenRecords is off. */
	private forWire<C extends { tabrl?: TabrlChoiceTokens }>(choice: C): C {
		if (this.options.tokenRecords !== false) return choice;
		const sent = { ...choice };
		delete sent.tabrl;
		return sent;
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

	/** `ended` runs once decoding has ended (done, failed or aborted). */
	private stream(
		p: Prepared,
		signal?: AbortSignal,
		ended: () => void = () => {}
	): AsyncIterable<TabrlChatCompletionChunk> {
		const decoders = this.decoders(p);
		const queue = new ChunkQueue<TabrlChatCompletionChunk>();
		const { meta, request } = p;
		const toolIndex = decoders.map(() => 0);
		const choiceChunk = (c: TabrlChunkChoice) => queue.push(buildChunk(meta, [c]));
		for (let i = 0; i < request.n; i++)
			choiceChunk({
				index: i,
				delta: { role: 'assistant', content: '' },
				logprobs: null,
				finish_reason: null
			});
		const onDelta = (i: number, d: ChoiceDelta) => {
			if (d.content === '' && d.calls.length === 0 && d.logprobs.length === 0) return;
			const delta: TabrlChunkChoice['delta'] = {};
			if (d.content !== '') delta.content = d.content;
			if (d.calls.length)
				delta.tool_calls = toOpenAIToolCalls(d.calls).map((c) => ({ index: toolIndex[i]++, ...c }));
			choiceChunk({
				index: i,
				delta,
				logprobs: d.logprobs.length ? { content: d.logprobs, refusal: null } : null,
				finish_reason: null
			});
		};
		this.decode(p, decoders, signal, onDelta).then(
			(results) => {
				results.forEach((r, i) =>
					queue.push({
						...buildChunk(meta, [
							this.forWire({
								index: i,
								delta: {},
								logprobs: null,
								finish_reason: this.finishReason(decoders[i], r),
								tabrl: ChatService.tokens(r, p),
								...(request.returnTokenIds ? { token_ids: [...r.ids] } : {})
							})
						]),
						// vLLM's return_token_ids: the prompt's ids with each choice's last chunk
						...(request.returnTokenIds ? { prompt_token_ids: [...p.promptIds] } : {})
					})
				);
				if (request.includeUsage) queue.push(buildChunk(meta, [], this.usage(p, results)));
				queue.close();
				ended();
			},
			(error) => {
				queue.close(error ?? new Error('generation failed'));
				ended();
			}
		);
		return queue.drain();
	}

	/** A whole Responses API answer (responses-output.ts) of one choice. */
	private async respond(
		p: Prepared,
		extras: ResponsesExtras,
		signal?: AbortSignal
	): Promise<TabrlResponse> {
		const assembler = new ResponseAssembler(this.model, p.request, extras);
		const decoders = this.decoders(p);
		const [r] = await this.decode(p, decoders, signal, (_, delta) => assembler.push(delta));
		const response = assembler.finish(
			this.finishReason(decoders[0], r),
			responsesUsage(p.promptIds.length, r.ids.length),
			this.options.tokenRecords === false ? undefined : ChatService.tokens(r, p)
		);
		this.items.remember(response.output);
		return response;
	}

	/** The Responses API's stream events of one choice; `ended` as for `stream`. */
	private streamResponse(
		p: Prepared,
		extras: ResponsesExtras,
		signal?: AbortSignal,
		ended: () => void = () => {}
	): AsyncIterable<ResponseStreamEvent> {
		const queue = new ChunkQueue<ResponseStreamEvent>();
		const assembler = new ResponseAssembler(this.model, p.request, extras, (e) => queue.push(e));
		assembler.start();
		const decoders = this.decoders(p);
		this.decode(p, decoders, signal, (_, delta) => assembler.push(delta)).then(
			([r]) => {
				const response = assembler.finish(
					this.finishReason(decoders[0], r),
					responsesUsage(p.promptIds.length, r.ids.length),
					this.options.tokenRecords === false ? undefined : ChatService.tokens(r, p)
				);
				this.items.remember(response.output);
				queue.close();
				ended();
			},
			(error) => {
				queue.close(error ?? new Error('generation failed'));
				ended();
			}
		);
		return queue.drain();
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
			const p = await this.prepare(toChat(parseJsonBody(req.body)), deadline.signal);
			ticket?.book(p.request.n * (p.promptIds.length + p.maxTokens));
			return await run(p, deadline.signal, ended);
		} catch (error) {
			ended();
			throw error;
		}
	}

	private async route(req: ServiceRequest): Promise<ServiceResponse> {
		const path = req.path.replace(/\/+$/, '');
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

/**
 * Responses API events as SSE frames (`event: TYPE` + `data: JSON`; no `[DONE]`: OpenAI
 * ends the stream after response.completed), or an `error` event on failure.
 */
export async function* responseEventFrames(
	events: AsyncIterable<ResponseStreamEvent>
): AsyncGenerator<string> {
	let sequence = 0;
	try {
		for await (const event of events) {
			sequence = event.sequence_number + 1;
			yield `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
		}
	} catch (error) {
		const { message, code, param } = toApiError(error);
		const event = { type: 'error', code, message, param, sequence_number: sequence };
		yield `event: error\ndata: ${JSON.stringify(event)}\n\n`;
	}
}

/** Chunks as SSE frames, ending with `data: [DONE]`, or with an error frame on failure. */
export async function* sseFrames(chunks: AsyncIterable<unknown>): AsyncGenerator<string> {
	try {
		for await (const chunk of chunks) yield `data: ${JSON.stringify(chunk)}\n\n`;
	} catch (error) {
		yield `data: ${JSON.stringify(toApiError(error).toBody())}\n\n`;
		return;
	}
	yield 'data: [DONE]\n\n';
}
