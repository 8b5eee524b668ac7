/**
 * @file A request's messages, tools and tool_choice checked and normalized for a chat
 * template: role 'developer' becomes 'system', text parts are joined with '\n', an
 * assistant's tool call `arguments` string is parsed into an object (templates write it
 * with `tojson`), fields a client echoes back from a response (refusal, annotations,
 * audio) are dropped; non-text content parts are refused.
 */
import type { ChatMessage, ToolCall, ToolSchema } from '../model/tokenizer/chat-messages';
import { invalidRequest } from './errors';
import type { ToolChoice } from './request';
import { describe, invalidType, invalidValue, isRecord } from './request-values';

/** OpenAI's function name rule. */
const FUNCTION_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

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

export function parseToolChoice(value: unknown, tools: ToolSchema[] | undefined): ToolChoice {
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
