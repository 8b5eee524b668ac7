/**
 * @file The answer of `POST /v1/responses` in OpenAI's Responses schema, built from the
 * same choice deltas as a chat completion: one assembler makes the stream events and the
 * final `response`, so both forms agree. Items in reply order: a `message` per stretch of
 * text, a `function_call` per call (whole); `response.incomplete` when cut by the token
 * limit; events numbered from 0. The response carries `tabrl` as chat completions do.
 */
import type {
	Response,
	ResponseFunctionToolCall,
	ResponseOutputItem,
	ResponseOutputMessage,
	ResponseOutputText,
	ResponseStreamEvent,
	ResponseUsage
} from 'openai/resources/responses/responses';
import type { ChatCompletionTokenLogprob } from 'openai/resources/chat/completions';
import type { ChoiceDelta } from './choice';
import type { ChatRequest } from './request';
import type { ResponsesExtras } from './responses-request';
import { randomId, type FinishReason, type TabrlChoiceTokens } from './response';

export type TabrlResponse = Response & { tabrl?: TabrlChoiceTokens };

type OutputLogprob = NonNullable<ResponseOutputText['logprobs']>[number];

function outputLogprob(e: ChatCompletionTokenLogprob): OutputLogprob {
	return {
		token: e.token,
		bytes: e.bytes ?? [],
		logprob: e.logprob,
		top_logprobs: e.top_logprobs.map((t) => ({
			token: t.token,
			bytes: t.bytes ?? [],
			logprob: t.logprob
		}))
	};
}

export function responsesUsage(input: number, output: number): ResponseUsage {
	return {
		input_tokens: input,
		input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
		output_tokens: output,
		output_tokens_details: { reasoning_tokens: 0 },
		total_tokens: input + output
	};
}

/** A message being written: its item, its index in `output`, its text so far. */
interface OpenMessage {
	item: ResponseOutputMessage;
	index: number;
	text: string;
	logprobs: OutputLogprob[];
}

/** Events as they happen (`emit`) and, at the end, the whole response. */
export class ResponseAssembler {
	readonly id = `resp_${randomId(40)}`;
	readonly createdAt = Math.floor(Date.now() / 1000);
	readonly output: ResponseOutputItem[] = [];
	#sequence = 0;
	#open: OpenMessage | null = null;
	/** Logprobs of tokens whose text has not come out yet. */
	#pending: OutputLogprob[] = [];

	constructor(
		private readonly model: string,
		private readonly request: ChatRequest,
		private readonly extras: ResponsesExtras,
		private readonly emit: (event: ResponseStreamEvent) => void = () => {}
	) {}

	#event<T extends ResponseStreamEvent['type']>(
		type: T,
		fields: Omit<Extract<ResponseStreamEvent, { type: T }>, 'type' | 'sequence_number'>
	): void {
		this.emit({ type, sequence_number: this.#sequence++, ...fields } as ResponseStreamEvent);
	}

	/** The response object in a given state (a copy of the output so far). */
	snapshot(status: Response['status'], usage?: ResponseUsage): TabrlResponse {
		const r: TabrlResponse = {
			id: this.id,
			object: 'response',
			created_at: this.createdAt,
			status,
			model: this.model,
			output: structuredClone(this.output),
			output_text: this.output
				.flatMap((o) => (o.type === 'message' ? o.content : []))
				.map((c) => (c.type === 'output_text' ? c.text : ''))
				.join(''),
			error: null,
			incomplete_details: null,
			instructions: this.extras.instructions,
			metadata: null,
			parallel_tool_calls: this.request.parallelToolCalls,
			temperature: this.request.temperature,
			top_p: this.request.topP,
			tool_choice: this.extras.toolChoice as Response['tool_choice'],
			tools: this.extras.tools as unknown as Response['tools'],
			max_output_tokens: this.request.maxTokens ?? null,
			text: { format: { type: 'text' } },
			top_logprobs: this.extras.topLogprobs,
			truncation: 'disabled',
			background: false
		};
		if (usage) r.usage = usage;
		return r;
	}

	start(): void {
		this.#event('response.created', { response: this.snapshot('in_progress') });
		this.#event('response.in_progress', { response: this.snapshot('in_progress') });
	}

	/**
	 * One delta of the reply: text into the open message, each call as an item. A token's
	 * logprob goes with the text that token releases (held text, e.g. a possible stop
	 * string, comes out with a later token); those of a call's tokens are not text's.
	 */
	push(delta: ChoiceDelta): void {
		if (this.extras.logprobs) this.#pending.push(...delta.logprobs.map(outputLogprob));
		if (delta.content !== '') {
			const m = this.#message();
			m.text += delta.content;
			const logprobs = this.#pending.splice(0);
			m.logprobs.push(...logprobs);
			this.#event('response.output_text.delta', {
				item_id: m.item.id,
				output_index: m.index,
				content_index: 0,
				delta: delta.content,
				logprobs
			});
		}
		if (delta.calls.length) this.#pending.length = 0;
		for (const call of delta.calls) {
			this.#closeMessage('completed');
			const item: ResponseFunctionToolCall = {
				id: `fc_${randomId(40)}`,
				type: 'function_call',
				status: 'in_progress',
				call_id: `call_${randomId(24)}`,
				name: call.name,
				arguments: ''
			};
			const index = this.output.length;
			this.output.push(item);
			this.#event('response.output_item.added', { output_index: index, item: { ...item } });
			this.#event('response.function_call_arguments.delta', {
				item_id: item.id!,
				output_index: index,
				delta: call.arguments
			});
			item.arguments = call.arguments;
			this.#event('response.function_call_arguments.done', {
				item_id: item.id!,
				output_index: index,
				name: call.name,
				arguments: call.arguments
			});
			item.status = 'completed';
			this.#event('response.output_item.done', { output_index: index, item: { ...item } });
		}
	}

	/** The end: the open message closed, the final event, the whole response. */
	/** `tabrl`: the token record to attach (undefined: none, as a server for others sends). */
	finish(reason: FinishReason, usage: ResponseUsage, tabrl?: TabrlChoiceTokens): TabrlResponse {
		const cut = reason === 'length';
		if (this.output.length === 0) this.#message();
		this.#closeMessage(cut ? 'incomplete' : 'completed');
		const response = this.snapshot(cut ? 'incomplete' : 'completed', usage);
		if (cut) response.incomplete_details = { reason: 'max_output_tokens' };
		if (tabrl) response.tabrl = tabrl;
		if (cut) this.#event('response.incomplete', { response });
		else this.#event('response.completed', { response });
		return response;
	}

	#message(): OpenMessage {
		if (this.#open) return this.#open;
		const item: ResponseOutputMessage = {
			id: `msg_${randomId(40)}`,
			type: 'message',
			role: 'assistant',
			status: 'in_progress',
			content: []
		};
		const index = this.output.length;
		this.output.push(item);
		this.#open = { item, index, text: '', logprobs: [] };
		this.#event('response.output_item.added', { output_index: index, item: structuredClone(item) });
		this.#event('response.content_part.added', {
			item_id: item.id,
			output_index: index,
			content_index: 0,
			part: { type: 'output_text', text: '', annotations: [] }
		});
		return this.#open;
	}

	#closeMessage(status: 'completed' | 'incomplete'): void {
		const m = this.#open;
		if (!m) return;
		this.#open = null;
		const part: ResponseOutputText = { type: 'output_text', text: m.text, annotations: [] };
		if (this.extras.logprobs) part.logprobs = m.logprobs;
		this.#event('response.output_text.done', {
			item_id: m.item.id,
			output_index: m.index,
			content_index: 0,
			text: m.text,
			logprobs: m.logprobs
		});
		this.#event('response.content_part.done', {
			item_id: m.item.id,
			output_index: m.index,
			content_index: 0,
			part: structuredClone(part)
		});
		m.item.content = [part];
		m.item.status = status;
		this.#event('response.output_item.done', {
			output_index: m.index,
			item: structuredClone(m.item)
		});
	}
}
