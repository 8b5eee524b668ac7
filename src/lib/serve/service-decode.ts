/**
 * @file The ChatService's decoding half: a request validated and tokenized (`prepare`), its
 * n choices decoded through the batching scheduler with one ChoiceDecoder each, and the
 * answer built, whole or streamed, as a chat completion or a Responses API response.
 * service.ts adds the routes and limits on top.
 */
import type { EngineSequence } from './engine';
import type { TokenGrammar } from '../model/constrain/token-mask';
import { ChoiceDecoder, type ChoiceDelta } from './choice';
import { RequestGrammars } from './constraint';
import { Admission } from './admission';
import { OpenAIApiError } from './errors';
import { encodePrompt } from './prompt';
import { DEFAULT_LIMITS, parseChatCompletionRequest, type ChatRequest } from './request';
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
import { BatchScheduler } from './scheduler';
import type { ResponseStreamEvent } from 'openai/resources/responses/responses';
import type { ResponsesExtras } from './responses-request';
import { ResponseAssembler, responsesUsage, type TabrlResponse } from './responses-output';
import { OutputItemMemory } from './responses-items';
import { ChunkQueue } from './sse';
import type { ChatServiceOptions } from './service-options';

/** A validated request ready to decode. */
export interface Prepared {
	request: ChatRequest;
	promptIds: number[];
	maxTokens: number;
	meta: CompletionMeta;
	/** The reply's grammar (constrained decoding), or null. */
	grammar: TokenGrammar | null;
}

export class ChatDecoding {
	readonly scheduler: BatchScheduler;
	readonly model: string;
	/** Grammars of constrained requests, per request shape. */
	protected readonly grammars: RequestGrammars;
	/** The latest Responses output items, for item_reference inputs. */
	protected readonly items = new OutputItemMemory();
	/** When the service started (GET /v1/models' `created`). */
	protected readonly created = Math.floor(Date.now() / 1000);

	/** Prompt + new tokens at most. */
	readonly contextLength: number;
	/** The caps on requests and tokens held, when set. */
	readonly admission: Admission | null;

	constructor(protected readonly options: ChatServiceOptions) {
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
	protected async prepare(body: unknown, signal?: AbortSignal): Promise<Prepared> {
		const parsed = parseChatCompletionRequest(body, this.options.limits ?? DEFAULT_LIMITS);
		const defaults = this.options.templateDefaults;
		const request = defaults
			? { ...parsed, chatTemplateKwargs: { ...defaults, ...parsed.chatTemplateKwargs } }
			: parsed;
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

	protected decoders(p: Prepared): ChoiceDecoder[] {
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
	protected async decode(
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

	protected finishReason(d: ChoiceDecoder, r: EngineSequence): FinishReason {
		if (d.stoppedByString) return d.calls.length ? 'tool_calls' : 'stop';
		if (r.finishReason === 'length') return 'length';
		return d.calls.length ? 'tool_calls' : 'stop';
	}

	protected usage(p: Prepared, results: EngineSequence[]) {
		const completion = results.reduce((s, r) => s + r.ids.length, 0);
		return buildUsage(p.promptIds.length, completion);
	}

	protected static tokens(r: EngineSequence, p: Prepared): TabrlChoiceTokens {
		const t: TabrlChoiceTokens = {
			prompt_ids: [...r.promptIds],
			ids: [...r.ids],
			logprobs: [...r.logprobs]
		};
		if (p.grammar) t.constrained = true;
		return t;
	}

	protected async complete(p: Prepared, signal?: AbortSignal): Promise<TabrlChatCompletion> {
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
					tabrl: ChatDecoding.tokens(r, p),
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
	protected forWire<C extends { tabrl?: TabrlChoiceTokens }>(choice: C): C {
		if (this.options.tokenRecords !== false) return choice;
		const sent = { ...choice };
		delete sent.tabrl;
		return sent;
	}

	/** `ended` runs once decoding has ended (done, failed or aborted). */
	protected stream(
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
								tabrl: ChatDecoding.tokens(r, p),
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
	protected async respond(
		p: Prepared,
		extras: ResponsesExtras,
		signal?: AbortSignal
	): Promise<TabrlResponse> {
		const assembler = new ResponseAssembler(this.model, p.request, extras);
		const decoders = this.decoders(p);
		const [r] = await this.decode(p, decoders, signal, (_, delta) => assembler.push(delta));
		return this.finishResponse(assembler, decoders[0], r, p);
	}

	/** Closes a Responses answer (its usage and token records) and remembers its items. */
	private finishResponse(
		assembler: ResponseAssembler,
		decoder: ChoiceDecoder,
		r: EngineSequence,
		p: Prepared
	): TabrlResponse {
		const response = assembler.finish(
			this.finishReason(decoder, r),
			responsesUsage(p.promptIds.length, r.ids.length),
			this.options.tokenRecords === false ? undefined : ChatDecoding.tokens(r, p)
		);
		this.items.remember(response.output);
		return response;
	}

	/** The Responses API's stream events of one choice; `ended` as for `stream`. */
	protected streamResponse(
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
				this.finishResponse(assembler, decoders[0], r, p);
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
}
