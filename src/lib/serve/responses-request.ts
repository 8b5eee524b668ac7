/**
 * @file `POST /v1/responses` bodies translated into a chat-completions body (request.ts),
 * so both routes share one path: the subset agent frameworks send (input strings and items,
 * instructions, function tools, tool_choice, text.format, max_output_tokens, sampling,
 * output-text logprobs). Refused with a 400 naming the field: server state
 * (previous_response_id, store: true, background), built-in tools, non-text parts, reasoning.
 */
import { invalidRequest, OpenAIApiError } from './errors';
import { describe, invalidType, isRecord, requireObjectBody } from './request-values';

/** What the Responses body asks beyond the chat request (the answer's echo fields). */
export interface ResponsesExtras {
	instructions: string | null;
	/** The function tools as given (flat shape), for the response's `tools` echo. */
	tools: Record<string, unknown>[];
	toolChoice: unknown;
	/** include holds 'message.output_text.logprobs'. */
	logprobs: boolean;
	topLogprobs: number;
}

const IGNORED = new Set([
	'user',
	'metadata',
	'service_tier',
	'safety_identifier',
	'prompt_cache_key'
]);

/** Fields OpenAI knows that this server cannot honour, and why. */
const UNSUPPORTED: Record<string, string> = {
	previous_response_id:
		'responses are not stored on this server: send the whole conversation in `input`',
	conversation:
		'conversations are not stored on this server: send the whole conversation in `input`',
	prompt: 'stored prompt templates do not exist on this server',
	reasoning: 'reasoning options are not supported (use chat completions with chat_template_kwargs)',
	max_tool_calls: 'max_tool_calls is not supported',
	context_management: 'context management is not supported',
	stream_options: 'stream_options are not supported on /v1/responses'
};

const KNOWN = new Set([
	'model',
	'input',
	'instructions',
	'tools',
	'tool_choice',
	'text',
	'max_output_tokens',
	'temperature',
	'top_p',
	'top_logprobs',
	'parallel_tool_calls',
	'stream',
	'include',
	'store',
	'background',
	'truncation'
]);

const unsupported = (param: string, why: string) =>
	invalidRequest(`Unsupported parameter: '${param}': ${why}.`, param, 'unsupported_parameter');
const present = (v: unknown) => v !== undefined && v !== null;

/** Text of an input message's content: a string or text parts (joined with '\n'). */
function inputText(content: unknown, param: string): string {
	if (typeof content === 'string') return content;
	if (!Array.isArray(content))
		throw invalidType(param, 'a string or an array of input_text parts', content);
	return content
		.map((part, i) => {
			const at = `${param}[${i}]`;
			if (!isRecord(part)) throw invalidType(at, 'a content part {type, text}', part);
			if (part.type !== 'input_text' && part.type !== 'output_text' && part.type !== 'text')
				throw invalidRequest(
					`Invalid value for '${at}.type': content parts of type ${describe(part.type)} are not ` +
						'supported: this model reads text only (input_text).',
					`${at}.type`,
					'invalid_value'
				);
			if (typeof part.text !== 'string') throw invalidType(`${at}.text`, 'a string', part.text);
			return part.text;
		})
		.join('\n');
}

const MESSAGE_ROLES = new Set(['user', 'system', 'developer', 'assistant']);

/** An earlier output item by id (item_reference), or undefined when not known. */
export type ItemLookup = (id: string) => Record<string, unknown> | undefined;

/** `input` items -> chat messages (function calls joined to their assistant turn). */
function inputMessages(input: unknown, lookup: ItemLookup): Record<string, unknown>[] {
	if (typeof input === 'string') return [{ role: 'user', content: input }];
	if (!Array.isArray(input))
		throw invalidType('input', 'a string or an array of input items', input);
	const messages: Record<string, unknown>[] = [];
	/** The assistant turn that function_call items join (its text, then its calls). */
	let turn: { role: 'assistant'; content: string | null; tool_calls?: unknown[] } | null = null;
	input.forEach((given, i) => {
		const at = `input[${i}]`;
		if (!isRecord(given))
			throw invalidType(at, 'an input item (a message, function_call, ...)', given);
		let item = given;
		if (given.type === 'item_reference') {
			if (typeof given.id !== 'string') throw invalidType(`${at}.id`, 'a string', given.id);
			const found = lookup(given.id);
			if (!found)
				throw invalidRequest(
					`Invalid value for '${at}.id': no item '${given.id}' is known to this server (it ` +
						'keeps only its latest output items, in memory): send the item itself.',
					`${at}.id`,
					'invalid_value'
				);
			item = found;
		}
		const type = item.type ?? 'message';
		if (type === 'message') {
			if (typeof item.role !== 'string' || !MESSAGE_ROLES.has(item.role))
				throw invalidRequest(
					`Invalid value for '${at}.role': ${describe(item.role)}; supported values are 'user', ` +
						"'system', 'developer' and 'assistant'.",
					`${at}.role`,
					'invalid_value'
				);
			const content = inputText(item.content, `${at}.content`);
			if (item.role === 'assistant') {
				turn = { role: 'assistant', content };
				messages.push(turn);
			} else {
				messages.push({ role: item.role, content });
				turn = null;
			}
		} else if (type === 'function_call') {
			for (const field of ['call_id', 'name', 'arguments'])
				if (typeof item[field] !== 'string')
					throw invalidType(`${at}.${field}`, 'a string', item[field]);
			const call = {
				id: item.call_id,
				type: 'function',
				function: { name: item.name, arguments: item.arguments }
			};
			if (!turn) {
				turn = { role: 'assistant', content: null };
				messages.push(turn);
			}
			(turn.tool_calls ??= []).push(call);
		} else if (type === 'function_call_output') {
			if (typeof item.call_id !== 'string')
				throw invalidType(`${at}.call_id`, 'a string', item.call_id);
			messages.push({
				role: 'tool',
				tool_call_id: item.call_id,
				content: inputText(item.output, `${at}.output`)
			});
			turn = null;
		} else
			throw invalidRequest(
				`Invalid value for '${at}.type': input items of type ${describe(type)} are not supported ` +
					"(supported: 'message', 'function_call', 'function_call_output', 'item_reference').",
				`${at}.type`,
				'invalid_value'
			);
	});
	return messages;
}

/** Flat function tools -> chat tools; built-in tools refused. */
function chatTools(tools: unknown): Record<string, unknown>[] | undefined {
	if (!present(tools)) return undefined;
	if (!Array.isArray(tools)) throw invalidType('tools', 'an array', tools);
	return tools.map((t, i) => {
		const at = `tools[${i}]`;
		if (!isRecord(t)) throw invalidType(at, "{type: 'function', name, parameters}", t);
		if (t.type !== 'function')
			throw invalidRequest(
				`Unsupported value: '${at}.type' ${describe(t.type)}: only function tools are supported ` +
					'(no built-in tools: web search, file search, computer use, code interpreter, MCP, ...).',
				`${at}.type`,
				'unsupported_value'
			);
		const extra = Object.keys(t).find(
			(k) => !['type', 'name', 'description', 'parameters', 'strict'].includes(k)
		);
		if (extra !== undefined)
			throw invalidRequest(
				`Unrecognized field '${extra}' in '${at}' (a function tool has type, name, description, parameters, strict).`,
				`${at}.${extra}`,
				'unknown_parameter'
			);
		const fn: Record<string, unknown> = { name: t.name };
		if (present(t.description)) fn.description = t.description;
		if (present(t.parameters)) fn.parameters = t.parameters;
		if (present(t.strict)) fn.strict = t.strict;
		return { type: 'function', function: fn };
	});
}

function chatToolChoice(choice: unknown): unknown {
	if (!present(choice) || typeof choice === 'string') return choice;
	if (isRecord(choice) && choice.type === 'function') {
		if (typeof choice.name !== 'string')
			throw invalidType('tool_choice.name', 'a string', choice.name);
		return { type: 'function', function: { name: choice.name } };
	}
	throw invalidRequest(
		`Unsupported value: 'tool_choice' ${JSON.stringify(choice)}: supported are 'none', 'auto', ` +
			"'required' and {type: 'function', name}.",
		'tool_choice',
		'unsupported_value'
	);
}

/** `text.format` -> response_format. */
function chatResponseFormat(text: unknown): unknown {
	if (!present(text)) return undefined;
	if (!isRecord(text)) throw invalidType('text', 'an object {format}', text);
	const extra = Object.keys(text).find((k) => k !== 'format' && k !== 'verbosity');
	if (extra !== undefined)
		throw invalidRequest(
			`Unrecognized field '${extra}' in 'text'.`,
			`text.${extra}`,
			'unknown_parameter'
		);
	if (present(text.verbosity) && text.verbosity !== 'medium')
		throw unsupported('text.verbosity', 'verbosity is not supported');
	const f = text.format;
	if (!present(f)) return undefined;
	if (!isRecord(f)) throw invalidType('text.format', 'an object {type, ...}', f);
	if (f.type === 'json_schema') {
		const schema = { ...f };
		delete schema.type;
		return { type: 'json_schema', json_schema: schema };
	}
	return f;
}

/**
 * A Responses body -> the chat-completions body for parseChatCompletionRequest, and what
 * the answer echoes. Throws OpenAI-shaped 400s naming the Responses field.
 */
export function translateResponsesRequest(
	raw: unknown,
	lookup: ItemLookup = () => undefined
): {
	chat: Record<string, unknown>;
	extras: ResponsesExtras;
} {
	const body = requireObjectBody(raw);
	for (const key of Object.keys(body)) {
		if (Object.hasOwn(UNSUPPORTED, key)) {
			if (present(body[key])) throw unsupported(key, UNSUPPORTED[key]);
		} else if (!KNOWN.has(key) && !IGNORED.has(key))
			throw invalidRequest(
				`Unrecognized request argument supplied: ${key}`,
				key,
				'unknown_parameter'
			);
	}
	if (body.store === true)
		throw unsupported(
			'store',
			'responses are not stored on this server (nothing to retrieve later): send store: false or leave it out'
		);
	if (body.background === true)
		throw unsupported('background', 'background responses are not supported: leave it out');
	if (present(body.truncation) && body.truncation !== 'disabled')
		throw unsupported('truncation', "only 'disabled' (a prompt past the context is a 400)");
	if (body.input === undefined || body.input === null)
		throw invalidRequest(
			"Missing required parameter: 'input'.",
			'input',
			'missing_required_parameter'
		);

	let logprobs = false;
	if (present(body.include)) {
		if (!Array.isArray(body.include))
			throw invalidType('include', 'an array of strings', body.include);
		for (const [i, what] of body.include.entries()) {
			if (what === 'message.output_text.logprobs') logprobs = true;
			else
				throw invalidRequest(
					`Unsupported value: 'include[${i}]' ${describe(what)}: only 'message.output_text.logprobs' is supported.`,
					`include[${i}]`,
					'unsupported_value'
				);
		}
	}
	if (present(body.instructions) && typeof body.instructions !== 'string')
		throw invalidType('instructions', 'a string', body.instructions);
	const instructions = (body.instructions as string | undefined) ?? null;
	const messages = [
		...(instructions === null ? [] : [{ role: 'system', content: instructions }]),
		...inputMessages(body.input, lookup)
	];
	const topLogprobs = body.top_logprobs;
	const chat: Record<string, unknown> = {
		model: body.model,
		messages,
		tools: chatTools(body.tools),
		tool_choice: chatToolChoice(body.tool_choice),
		response_format: chatResponseFormat(body.text),
		max_completion_tokens: body.max_output_tokens,
		temperature: body.temperature,
		top_p: body.top_p,
		parallel_tool_calls: body.parallel_tool_calls,
		stream: body.stream,
		logprobs: logprobs || (present(topLogprobs) && topLogprobs !== 0) ? true : undefined,
		top_logprobs: present(topLogprobs) && topLogprobs !== 0 ? topLogprobs : undefined
	};
	return {
		chat,
		extras: {
			instructions,
			tools: Array.isArray(body.tools) ? (body.tools as Record<string, unknown>[]) : [],
			toolChoice: body.tool_choice ?? 'auto',
			logprobs: chat.logprobs === true,
			topLogprobs: typeof topLogprobs === 'number' ? topLogprobs : 0
		}
	};
}

/** Chat-completions parameter names -> the Responses API's, for errors found after translation. */
const RENAMES: [RegExp, string][] = [
	[/^max_completion_tokens$/, 'max_output_tokens'],
	[/^response_format\.json_schema\b/, 'text.format'],
	[/^response_format\b/, 'text.format'],
	[/^tools\[(\d+)\]\.function\b/, 'tools[$1]'],
	[/^tool_choice\.function\b/, 'tool_choice'],
	[/^messages\b/, 'input']
];

/**
 * An error of the chat-completions validation, its `param` (and the message's mention of
 * it) in the Responses API's names. `input[...]` indexes count the chat messages made from
 * the input (instructions first), which may differ from the items' indexes.
 */
export function toResponsesError(error: unknown): unknown {
	if (!(error instanceof OpenAIApiError) || error.param === null) return error;
	const from = error.param;
	const rule = RENAMES.find(([re]) => re.test(from));
	if (!rule) return error;
	const param = from.replace(rule[0], rule[1]);
	return new OpenAIApiError(
		error.status,
		error.message.split(from).join(param),
		error.type,
		param,
		error.code
	);
}
