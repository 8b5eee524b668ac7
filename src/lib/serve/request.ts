/**
 * @file Validation of a `POST /v1/chat/completions` body into a typed ChatRequest, with
 * OpenAI's error shape (400 invalid_request_error naming the `param`). What the engine
 * cannot do is refused, not ignored (penalties, logit_bias, the deprecated `functions`), and
 * so are unknown fields, so a misspelt option does not silently do nothing. Extensions as
 * vLLM spells them: `top_k`, `chat_template_kwargs`, `return_token_ids`.
 */
import type { ChatMessage, ToolSchema } from '../model/tokenizer/chat-messages';
import { invalidRequest } from './errors';
import { parseResponseFormat, parseStop } from './request-format';
import { normalizeMessages, normalizeTools, parseToolChoice } from './request-messages';
import {
	invalidType,
	invalidValue,
	isRecord,
	optionalBoolean,
	optionalInteger,
	optionalNumber,
	requireObjectBody
} from './request-values';

/** Which tool calls the caller asks for: 'none' hides the tools from the template and
 * leaves the text unparsed; 'auto' lets the model choose; 'required' and a named function
 * are enforced by constrained decoding (constraint.ts): the reply is tool calls. */
export type ToolChoice = 'none' | 'auto' | 'required' | { name: string };

/** The reply's format: free text, any JSON object, or JSON of a schema (constrained
 * decoding, constraint.ts). `schema` is as given (undefined: any JSON value). */
export type ResponseFormat =
	| { type: 'text' }
	| { type: 'json_object' }
	| { type: 'json_schema'; name: string; schema: unknown; strict: boolean };

export interface ChatRequest {
	model: string;
	messages: ChatMessage[];
	/** Function schemas for the template; undefined when none (or tool_choice 'none'). */
	tools: ToolSchema[] | undefined;
	toolChoice: ToolChoice;
	/** Several tool calls in one reply may be generated (OpenAI's default true). */
	parallelToolCalls: boolean;
	responseFormat: ResponseFormat;
	n: number;
	/** 0 is greedy. Default 1. */
	temperature: number;
	/** In (0, 1]; 1 is off. */
	topP: number;
	/** 0 is off. */
	topK: number;
	/** New tokens per choice at most; undefined: up to the context window. */
	maxTokens: number | undefined;
	/** Stop strings (not part of the returned text). */
	stop: string[];
	seed: number | undefined;
	logprobs: boolean;
	/** With logprobs: the most likely tokens per position (0..20; the engine's top-k pass). */
	topLogprobs: number;
	stream: boolean;
	/** stream_options.include_usage: a last chunk with usage and no choices. */
	includeUsage: boolean;
	/** Extra chat template variables. */
	chatTemplateKwargs: Record<string, unknown>;
	/**
	 * vLLM's return_token_ids: the prompt's token ids (top level, `prompt_token_ids`) and each
	 * choice's sampled ids (`token_ids`), as ART's trainer reads them.
	 */
	returnTokenIds: boolean;
	/** vLLM's return_tokens_as_token_ids: logprob entries name their token "token_id:N". */
	tokensAsTokenIds: boolean;
}

export interface RequestLimits {
	/** Most choices one request may ask for (OpenAI's own limit is 128). */
	maxN: number;
}

export const DEFAULT_LIMITS: RequestLimits = { maxN: 128 };

/** Fields accepted and ignored: bookkeeping that does not change the output. */
const IGNORED = new Set([
	'user',
	'metadata',
	'store',
	'service_tier',
	'safety_identifier',
	'prompt_cache_key'
]);
/** Fields read below. */
const KNOWN = new Set([
	'model',
	'messages',
	'tools',
	'tool_choice',
	'n',
	'temperature',
	'top_p',
	'top_k',
	'max_tokens',
	'max_completion_tokens',
	'stop',
	'seed',
	'logprobs',
	'top_logprobs',
	'stream',
	'stream_options',
	'frequency_penalty',
	'presence_penalty',
	'logit_bias',
	'response_format',
	'parallel_tool_calls',
	'chat_template_kwargs',
	'return_token_ids',
	'return_tokens_as_token_ids'
]);
/** Fields OpenAI knows that this engine cannot honour. */
const UNSUPPORTED: Record<string, string> = {
	functions: "the deprecated 'functions' is not supported; use 'tools'",
	function_call: "the deprecated 'function_call' is not supported; use 'tool_choice'",
	audio: 'audio output is not supported',
	modalities: 'only text output is supported',
	prediction: 'predicted outputs are not supported',
	web_search_options: 'web search is not supported',
	reasoning_effort: 'reasoning_effort is not supported (use chat_template_kwargs)',
	verbosity: 'verbosity is not supported'
};
/** Validates a chat completion request body (already parsed from JSON). */
export function parseChatCompletionRequest(
	raw: unknown,
	limits: RequestLimits = DEFAULT_LIMITS
): ChatRequest {
	const body = requireObjectBody(raw);
	for (const key of Object.keys(body)) {
		// Own keys only: `key in UNSUPPORTED` is true for 'constructor', 'toString' and
		// '__proto__' (the prototype's), which must be plain unknown fields like any other.
		const unsupported = Object.hasOwn(UNSUPPORTED, key);
		if (unsupported && body[key] !== undefined && body[key] !== null)
			throw invalidRequest(
				`Unsupported parameter: '${key}': ${UNSUPPORTED[key]}.`,
				key,
				'unsupported_parameter'
			);
		if (!KNOWN.has(key) && !IGNORED.has(key) && !unsupported)
			throw invalidRequest(
				`Unrecognized request argument supplied: ${key}`,
				key,
				'unknown_parameter'
			);
	}

	const model = body.model;
	if (model === undefined || model === null)
		throw invalidRequest(
			"Missing required parameter: 'model'.",
			'model',
			'missing_required_parameter'
		);
	if (typeof model !== 'string' || model === '')
		throw invalidType('model', 'a non-empty string', model);

	const messages = normalizeMessages(body.messages);
	const allTools = normalizeTools(body.tools);
	const toolChoice = parseToolChoice(body.tool_choice, allTools);

	const n =
		optionalInteger(body, 'n', (v) =>
			v < 1
				? `${v} is below the minimum of 1.`
				: v > limits.maxN
					? `${v} is above the maximum of ${limits.maxN}.`
					: null
		) ?? 1;
	const temperature =
		optionalNumber(body, 'temperature', (v) =>
			v < 0 || v > 2 ? `${v}; temperature is between 0 and 2.` : null
		) ?? 1;
	const topP =
		optionalNumber(body, 'top_p', (v) => (v <= 0 || v > 1 ? `${v}; top_p is in (0, 1].` : null)) ??
		1;
	const topK =
		optionalInteger(body, 'top_k', (v) => (v < 0 ? `${v}; top_k is 0 (off) or more.` : null)) ?? 0;
	const tokenCheck = (v: number) => (v < 1 ? `${v} is below the minimum of 1.` : null);
	const maxTokens = optionalInteger(body, 'max_tokens', tokenCheck);
	const maxCompletionTokens = optionalInteger(body, 'max_completion_tokens', tokenCheck);
	if (
		maxTokens !== undefined &&
		maxCompletionTokens !== undefined &&
		maxTokens !== maxCompletionTokens
	)
		throw invalidValue(
			'max_completion_tokens',
			`it is ${maxCompletionTokens} but max_tokens is ${maxTokens}; give one of them.`
		);
	const stop = parseStop(body.stop);
	const seed = optionalInteger(body, 'seed', () => null);

	const logprobs = optionalBoolean(body, 'logprobs') ?? false;
	const topLogprobs = optionalInteger(body, 'top_logprobs', (v) =>
		v < 0 || v > 20 ? `${v}; top_logprobs is between 0 and 20.` : null
	);
	if (topLogprobs !== undefined && !logprobs)
		throw invalidValue('top_logprobs', "it needs 'logprobs' to be true.");

	const stream = optionalBoolean(body, 'stream') ?? false;
	let includeUsage = false;
	const so = body.stream_options;
	if (so !== undefined && so !== null) {
		if (!stream) throw invalidValue('stream_options', "it is only allowed when 'stream' is true.");
		if (!isRecord(so)) throw invalidType('stream_options', 'an object', so);
		includeUsage = optionalBoolean(so, 'include_usage') ?? false;
	}

	for (const param of ['frequency_penalty', 'presence_penalty'])
		if (
			optionalNumber(body, param, (v) => (v < -2 || v > 2 ? `${v}; it is between -2 and 2.` : null))
		)
			throw invalidRequest(
				`Unsupported value: '${param}' must be 0: penalties are not implemented.`,
				param,
				'unsupported_value'
			);
	const bias = body.logit_bias;
	if (bias !== undefined && bias !== null) {
		if (!isRecord(bias)) throw invalidType('logit_bias', 'an object', bias);
		if (Object.keys(bias).length)
			throw invalidRequest(
				"Unsupported value: 'logit_bias' must be empty: logit bias is not implemented.",
				'logit_bias',
				'unsupported_value'
			);
	}
	const responseFormat = parseResponseFormat(body.response_format);
	const parallelToolCalls = optionalBoolean(body, 'parallel_tool_calls') ?? true;
	const kwargs = body.chat_template_kwargs;
	if (kwargs !== undefined && kwargs !== null && !isRecord(kwargs))
		throw invalidType('chat_template_kwargs', 'an object of template variables', kwargs);

	return {
		model,
		messages,
		tools: toolChoice === 'none' ? undefined : allTools,
		toolChoice,
		parallelToolCalls,
		responseFormat,
		n,
		temperature,
		topP,
		topK,
		maxTokens: maxTokens ?? maxCompletionTokens,
		stop,
		seed,
		logprobs,
		topLogprobs: topLogprobs ?? 0,
		stream,
		includeUsage,
		chatTemplateKwargs: (kwargs as Record<string, unknown> | undefined) ?? {},
		returnTokenIds: optionalBoolean(body, 'return_token_ids') ?? false,
		tokensAsTokenIds: optionalBoolean(body, 'return_tokens_as_token_ids') ?? false
	};
}
