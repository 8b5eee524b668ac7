/**
 * @file Validation of a `POST /v1/chat/completions` body into a typed ChatRequest, with
 * OpenAI's error shape (400 invalid_request_error naming the `param`). Absent and null mean
 * the same (the openai package sends null for some unset fields). What the engine cannot do
 * is refused, not ignored: non-zero penalties, logit_bias, response formats other than
 * text / json_object / json_schema, non-text content parts, the deprecated `functions`. A json_schema's
 * schema is compiled later (constraint.ts), where its unsupported keywords are refused. Unknown fields are refused as OpenAI refuses them, so a
 * misspelt option does not silently do nothing. Two extensions (as vLLM spells them):
 * `top_k` and `chat_template_kwargs` (e.g. Qwen3's `{"enable_thinking": false}`).
 *
 * Messages come out normalized for a chat template (prompt.ts): role 'developer' becomes
 * 'system'; text content parts are joined with '\n'; an assistant's tool call `arguments`
 * JSON string is parsed into an object (templates write arguments with `tojson`, as
 * transformers expects them); fields the client echoes back from a response (refusal,
 * annotations, audio) are dropped.
 */
import type { ChatMessage, ToolCall, ToolSchema } from '../model/tokenizer/chat-messages';
import { invalidRequest } from './errors';

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

/** OpenAI's limit on stop strings per request. */
const MAX_STOP = 4;
/** OpenAI's function name rule. */
const FUNCTION_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

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

export function isRecord(x: unknown): x is Record<string, unknown> {
	return typeof x === 'object' && x !== null && !Array.isArray(x);
}

/** A JSON value's kind, as OpenAI's type errors word it. */
export function describe(x: unknown): string {
	if (x === null) return 'null';
	if (Array.isArray(x)) return 'an array';
	return typeof x === 'object' ? 'an object' : `${typeof x} ${JSON.stringify(x)}`;
}

export const invalidType = (param: string, want: string, got: unknown) =>
	invalidRequest(
		`Invalid type for '${param}': expected ${want}, but got ${describe(got)}.`,
		param,
		'invalid_type'
	);
const invalidValue = (param: string, message: string) =>
	invalidRequest(`Invalid value for '${param}': ${message}`, param, 'invalid_value');

function optionalNumber(
	body: Record<string, unknown>,
	param: string,
	check: (v: number) => string | null
): number | undefined {
	const v = body[param];
	if (v === undefined || v === null) return undefined;
	if (typeof v !== 'number' || !Number.isFinite(v)) throw invalidType(param, 'a number', v);
	const problem = check(v);
	if (problem) throw invalidValue(param, problem);
	return v;
}

function optionalInteger(
	body: Record<string, unknown>,
	param: string,
	check: (v: number) => string | null
): number | undefined {
	const v = body[param];
	if (v === undefined || v === null) return undefined;
	if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw invalidType(param, 'an integer', v);
	const problem = check(v);
	if (problem) throw invalidValue(param, problem);
	return v;
}

function optionalBoolean(body: Record<string, unknown>, param: string): boolean | undefined {
	const v = body[param];
	if (v === undefined || v === null) return undefined;
	if (typeof v !== 'boolean') throw invalidType(param, 'a boolean', v);
	return v;
}

/** Text of a content field: a string, null, or text parts (joined with '\n'). */
function contentText(content: unknown, param: string): string | null {
	if (content === undefined || content === null) return null;
	if (typeof content === 'string') return content;
	if (!Array.isArray(content))
		throw invalidType(param, 'a string or an array of content parts', content);
	return content
		.map((part, i) => {
			const at = `${param}[${i}]`;
			if (!isRecord(part) || typeof part.type !== 'string')
				throw invalidType(at, 'a content part {type, ...}', part);
			if (part.type !== 'text')
				throw invalidValue(
					`${at}.type`,
					`content parts of type '${part.type}' are not supported: this model reads text only.`
				);
			if (typeof part.text !== 'string') throw invalidType(`${at}.text`, 'a string', part.text);
			return part.text;
		})
		.join('\n');
}

/** An assistant's tool call, arguments parsed into an object for the template. */
function normalizeToolCall(tc: unknown, param: string): ToolCall {
	if (!isRecord(tc) || !isRecord(tc.function))
		throw invalidType(param, "a tool call {id, type: 'function', function: {name, arguments}}", tc);
	if (tc.type !== undefined && tc.type !== 'function')
		throw invalidValue(
			`${param}.type`,
			`only 'function' tool calls exist, got ${describe(tc.type)}.`
		);
	const { name, arguments: args } = tc.function;
	if (typeof name !== 'string' || name === '')
		throw invalidType(`${param}.function.name`, 'a non-empty string', name);
	let parsed: unknown = args;
	if (typeof args === 'string') {
		try {
			parsed = args.trim() === '' ? {} : JSON.parse(args);
		} catch {
			throw invalidValue(
				`${param}.function.arguments`,
				`not valid JSON (${JSON.stringify(args.slice(0, 80))}).`
			);
		}
	}
	if (!isRecord(parsed))
		throw invalidType(`${param}.function.arguments`, 'a JSON object (as a string)', parsed);
	const out: ToolCall = { type: 'function', function: { name, arguments: parsed } };
	if (tc.id !== undefined && tc.id !== null) {
		if (typeof tc.id !== 'string') throw invalidType(`${param}.id`, 'a string', tc.id);
		out.id = tc.id;
	}
	return out;
}

const ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool']);

/** Checks OpenAI-shaped messages and returns them normalized for a chat template. */
export function normalizeMessages(messages: unknown): ChatMessage[] {
	if (messages === undefined || messages === null)
		throw invalidRequest(
			"Missing required parameter: 'messages'.",
			'messages',
			'missing_required_parameter'
		);
	if (!Array.isArray(messages)) throw invalidType('messages', 'an array', messages);
	if (messages.length === 0)
		throw invalidRequest(
			"Invalid 'messages': empty array. Expected an array with minimum length 1.",
			'messages',
			'empty_array'
		);
	/** Ids of the tool calls a tool message may answer (those of the last assistant turn). */
	let openCalls: Set<string> | null = null;
	return messages.map((m, i) => {
		const at = `messages[${i}]`;
		if (!isRecord(m)) throw invalidType(at, 'an object', m);
		const role = m.role;
		if (typeof role !== 'string' || !ROLES.has(role))
			throw invalidValue(
				`${at}.role`,
				`${describe(role)}; supported values are 'system', 'developer', 'user', 'assistant' and 'tool'.`
			);
		const content = contentText(m.content, `${at}.content`);
		const out: ChatMessage = { role: role === 'developer' ? 'system' : role, content };
		if (m.name !== undefined && m.name !== null) {
			if (typeof m.name !== 'string') throw invalidType(`${at}.name`, 'a string', m.name);
			out.name = m.name;
		}
		if (role === 'assistant') {
			const calls = m.tool_calls ?? [];
			if (!Array.isArray(calls)) throw invalidType(`${at}.tool_calls`, 'an array', calls);
			if (content === null && calls.length === 0)
				throw invalidRequest(
					`Invalid '${at}': an assistant message needs 'content' or 'tool_calls'.`,
					`${at}.content`,
					'missing_required_parameter'
				);
			if (calls.length) {
				out.tool_calls = calls.map((tc, j) => normalizeToolCall(tc, `${at}.tool_calls[${j}]`));
				openCalls = new Set(
					calls.map((tc) => (tc as { id?: unknown }).id).filter((id) => typeof id === 'string')
				);
			} else openCalls = null;
			if (typeof m.reasoning_content === 'string') out.reasoning_content = m.reasoning_content;
		} else if (role === 'tool') {
			if (typeof m.tool_call_id !== 'string')
				throw invalidType(`${at}.tool_call_id`, 'a string', m.tool_call_id);
			if (openCalls === null)
				throw invalidRequest(
					`Invalid '${at}': messages with role 'tool' must answer a preceding assistant message with 'tool_calls'.`,
					`${at}.role`,
					'invalid_value'
				);
			if (openCalls.size > 0 && !openCalls.has(m.tool_call_id))
				throw invalidValue(
					`${at}.tool_call_id`,
					`${JSON.stringify(m.tool_call_id)} is not the id of a tool call in the preceding assistant message (${[...openCalls].join(', ')}).`
				);
			out.tool_call_id = m.tool_call_id;
			out.content = content ?? '';
		} else {
			openCalls = null;
			if (content === null)
				throw invalidRequest(
					`Invalid '${at}': a ${role} message needs 'content'.`,
					`${at}.content`,
					'missing_required_parameter'
				);
		}
		return out;
	});
}

/** Checks `tools` (OpenAI function schemas). */
export function normalizeTools(tools: unknown): ToolSchema[] | undefined {
	if (tools === undefined || tools === null) return undefined;
	if (!Array.isArray(tools)) throw invalidType('tools', 'an array', tools);
	const seen = new Set<string>();
	return tools.map((t, i) => {
		const at = `tools[${i}]`;
		if (!isRecord(t) || t.type !== 'function' || !isRecord(t.function))
			throw invalidType(at, "{type: 'function', function: {name, description, parameters}}", t);
		const { name, description, parameters } = t.function;
		if (typeof name !== 'string' || !FUNCTION_NAME.test(name))
			throw invalidValue(
				`${at}.function.name`,
				`${describe(name)}; a function name is 1-64 characters of a-z, A-Z, 0-9, _ and -.`
			);
		if (seen.has(name))
			throw invalidValue(`${at}.function.name`, `the function name '${name}' is used twice.`);
		seen.add(name);
		if (description !== undefined && typeof description !== 'string')
			throw invalidType(`${at}.function.description`, 'a string', description);
		if (parameters !== undefined && !isRecord(parameters))
			throw invalidType(`${at}.function.parameters`, 'a JSON schema object', parameters);
		return t as unknown as ToolSchema;
	});
}

function parseToolChoice(value: unknown, tools: ToolSchema[] | undefined): ToolChoice {
	if (value === undefined || value === null) return tools?.length ? 'auto' : 'none';
	if (value === 'none' || value === 'auto' || value === 'required') {
		if (value !== 'none' && !tools?.length)
			throw invalidValue('tool_choice', `'${value}' needs 'tools' to be given.`);
		return value;
	}
	if (isRecord(value) && value.type === 'function' && isRecord(value.function)) {
		const name = value.function.name;
		if (typeof name !== 'string') throw invalidType('tool_choice.function.name', 'a string', name);
		if (!tools?.some((t) => t.function.name === name))
			throw invalidValue(
				'tool_choice',
				`no function named '${name}' in 'tools' (${tools?.map((t) => t.function.name).join(', ') || 'none given'}).`
			);
		return { name };
	}
	throw invalidType(
		'tool_choice',
		"'none', 'auto', 'required' or {type: 'function', function: {name}}",
		value
	);
}

function parseStop(value: unknown): string[] {
	if (value === undefined || value === null) return [];
	const list = typeof value === 'string' ? [value] : value;
	if (!Array.isArray(list)) throw invalidType('stop', 'a string or an array of strings', value);
	if (list.length > MAX_STOP)
		throw invalidValue('stop', `at most ${MAX_STOP} stop strings, got ${list.length}.`);
	list.forEach((s, i) => {
		if (typeof s !== 'string') throw invalidType(`stop[${i}]`, 'a string', s);
		if (s === '') throw invalidValue(`stop[${i}]`, 'a stop string cannot be empty.');
	});
	return list as string[];
}

/** OpenAI's rule for a json_schema's name. */
const SCHEMA_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

function parseResponseFormat(format: unknown): ResponseFormat {
	if (format === undefined || format === null) return { type: 'text' };
	if (!isRecord(format)) throw invalidType('response_format', 'an object', format);
	const extra = (allowed: string[], at: string, o: Record<string, unknown>) => {
		const key = Object.keys(o).find((k) => !allowed.includes(k));
		if (key !== undefined)
			throw invalidRequest(
				`Unrecognized field '${key}' in '${at}' (allowed: ${allowed.join(', ')}).`,
				`${at}.${key}`,
				'unknown_parameter'
			);
	};
	switch (format.type) {
		case 'text':
		case 'json_object':
			extra(['type'], 'response_format', format);
			return { type: format.type };
		case 'json_schema': {
			extra(['type', 'json_schema'], 'response_format', format);
			const js = format.json_schema;
			if (js === undefined || js === null)
				throw invalidRequest(
					"Missing required parameter: 'response_format.json_schema'.",
					'response_format.json_schema',
					'missing_required_parameter'
				);
			if (!isRecord(js))
				throw invalidType('response_format.json_schema', '{name, schema, strict}', js);
			extra(['name', 'schema', 'strict', 'description'], 'response_format.json_schema', js);
			if (js.name === undefined || js.name === null)
				throw invalidRequest(
					"Missing required parameter: 'response_format.json_schema.name'.",
					'response_format.json_schema.name',
					'missing_required_parameter'
				);
			if (typeof js.name !== 'string' || !SCHEMA_NAME.test(js.name))
				throw invalidValue(
					'response_format.json_schema.name',
					`${describe(js.name)}; a schema name is 1-64 characters of a-z, A-Z, 0-9, _ and -.`
				);
			if (
				js.description !== undefined &&
				js.description !== null &&
				typeof js.description !== 'string'
			)
				throw invalidType('response_format.json_schema.description', 'a string', js.description);
			const schema = js.schema ?? undefined;
			if (schema !== undefined && !isRecord(schema) && typeof schema !== 'boolean')
				throw invalidType('response_format.json_schema.schema', 'a JSON schema object', schema);
			const strict = js.strict ?? false;
			if (typeof strict !== 'boolean')
				throw invalidType('response_format.json_schema.strict', 'a boolean', strict);
			return { type: 'json_schema', name: js.name, schema, strict };
		}
		default:
			throw invalidRequest(
				`Unsupported value: 'response_format.type' ${describe(format.type)}: supported are 'text', 'json_object' and 'json_schema'.`,
				'response_format.type',
				'unsupported_value'
			);
	}
}

/** Validates a chat completion request body (already parsed from JSON). */
export function parseChatCompletionRequest(
	body: unknown,
	limits: RequestLimits = DEFAULT_LIMITS
): ChatRequest {
	if (!isRecord(body))
		throw invalidRequest(
			`The request body must be a JSON object, got ${describe(body)}.`,
			null,
			'invalid_type'
		);
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
