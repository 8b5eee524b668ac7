/**
 * @file Response objects in OpenAI's schema: `chat.completion`, its
 * `chat.completion.chunk`s and `GET /v1/models`. Every choice (in a stream, its last chunk)
 * also carries `tabrl: {prompt_ids, ids, logprobs}`: the prompt's ids, exactly the sampled
 * ids, and their sampling logprobs (non-finite: null), what training reads; OpenAI clients
 * pass the field through.
 */
import type {
	ChatCompletion,
	ChatCompletionChunk,
	ChatCompletionMessageFunctionToolCall,
	ChatCompletionTokenLogprob
} from 'openai/resources/chat/completions';
import type { CompletionUsage } from 'openai/resources/completions';
import type { ParsedToolCall } from './tool-calls';

/** The token-level record of a choice that training needs. */
export interface TabrlChoiceTokens {
	prompt_ids: number[];
	ids: number[];
	logprobs: number[];
	/** The reply was sampled under a token mask (response_format / tool_choice): the ids
	 * are what was sampled, the logprobs the model's own over its full vocabulary (not the
	 * masked distribution's), as for top-k / top-p. */
	constrained?: true;
}

export type FinishReason = 'stop' | 'length' | 'tool_calls';

/**
 * A choice with TabRL's token record (the in-process clients' answers; a service made with
 * tokenRecords false, as `cli serve` makes it, leaves it out of what it sends) and, when asked
 * for (return_token_ids), vLLM's `token_ids`.
 */
export type TabrlChoice = ChatCompletion.Choice & {
	tabrl: TabrlChoiceTokens;
	token_ids?: number[];
};
/** `prompt_token_ids`: vLLM's return_token_ids (the prompt's ids), when asked for. */
export type TabrlChatCompletion = Omit<ChatCompletion, 'choices'> & {
	choices: TabrlChoice[];
	prompt_token_ids?: number[];
};
export type TabrlChunkChoice = ChatCompletionChunk.Choice & {
	tabrl?: TabrlChoiceTokens;
	token_ids?: number[];
};
export type TabrlChatCompletionChunk = Omit<ChatCompletionChunk, 'choices'> & {
	choices: TabrlChunkChoice[];
	prompt_token_ids?: number[];
};

/** Identity of one completion, shared by all its chunks. */
export interface CompletionMeta {
	id: string;
	/** Unix seconds. */
	created: number;
	model: string;
}

const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** Random bytes drawn 4 KiB at a time: a getRandomValues call costs ~20 us in Node, a
 * noticeable share of a local request (thousands per GRPO step of a multi-turn agent). */
const pool = new Uint8Array(4096);
let poolUsed = pool.length;

/** `n` random letters and digits (crypto.getRandomValues: Node 20 and browsers). */
export function randomId(n: number): string {
	let id = '';
	for (let i = 0; i < n; i++) {
		if (poolUsed === pool.length) {
			crypto.getRandomValues(pool);
			poolUsed = 0;
		}
		// 256 % 62 != 0 biases a few characters slightly; ids need uniqueness, not uniformity.
		id += ALPHANUMERIC[pool[poolUsed++] % ALPHANUMERIC.length];
	}
	return id;
}

export function newCompletionMeta(model: string, now = Date.now()): CompletionMeta {
	return { id: `chatcmpl-${randomId(29)}`, created: Math.floor(now / 1000), model };
}

/** OpenAI tool calls with fresh ids (`call_` + 24 characters, as OpenAI's). */
export function toOpenAIToolCalls(
	calls: readonly ParsedToolCall[]
): ChatCompletionMessageFunctionToolCall[] {
	return calls.map((c) => ({
		id: `call_${randomId(24)}`,
		type: 'function',
		function: { name: c.name, arguments: c.arguments }
	}));
}

/** Everything one choice ended with. */
export interface ChoiceResult {
	index: number;
	/** Content released by the decoder (all of it). */
	content: string;
	toolCalls: ChatCompletionMessageFunctionToolCall[];
	finishReason: FinishReason;
	/** OpenAI logprob entries, or null when not asked for. */
	logprobs: ChatCompletionTokenLogprob[] | null;
	tabrl: TabrlChoiceTokens;
	/** vLLM's sampled ids (absent: not asked for). */
	tokenIds?: number[];
}

export function buildChoice(r: ChoiceResult): TabrlChoice {
	const message: ChatCompletion.Choice['message'] = {
		role: 'assistant',
		// OpenAI sends null content with tool calls and nothing else.
		content: r.content === '' && r.toolCalls.length ? null : r.content,
		refusal: null
	};
	if (r.toolCalls.length) message.tool_calls = r.toolCalls;
	return {
		index: r.index,
		message,
		logprobs: r.logprobs ? { content: r.logprobs, refusal: null } : null,
		finish_reason: r.finishReason,
		tabrl: r.tabrl,
		...(r.tokenIds ? { token_ids: r.tokenIds } : {})
	};
}

export function buildUsage(promptTokens: number, completionTokens: number): CompletionUsage {
	return {
		prompt_tokens: promptTokens,
		completion_tokens: completionTokens,
		total_tokens: promptTokens + completionTokens
	};
}

export function buildCompletion(
	meta: CompletionMeta,
	choices: TabrlChoice[],
	usage: CompletionUsage
): TabrlChatCompletion {
	return { ...meta, object: 'chat.completion', choices, usage };
}

/** A chunk; `usage` is null on every chunk but the extra last one when include_usage is on. */
export function buildChunk(
	meta: CompletionMeta,
	choices: TabrlChunkChoice[],
	usage: CompletionUsage | null = null
): TabrlChatCompletionChunk {
	return { ...meta, object: 'chat.completion.chunk', choices, usage };
}

/** `GET /v1/models`: the one model this server serves. */
export function buildModelList(model: string, created: number) {
	return {
		object: 'list' as const,
		data: [{ id: model, object: 'model' as const, created, owned_by: 'tabrl' }]
	};
}
