/**
 * @file Chat messages and tool schemas in the OpenAI shape, and the structural checks made
 * before they reach a chat template. The checks reject only what no template can mean
 * (a message that is not an object, a role that is not a string, tool calls that are not a
 * list of functions); everything else goes to the template exactly as given, as
 * transformers' `apply_chat_template` passes it (it does not parse `arguments` strings, add
 * fields or drop them).
 */

import { ChatMessagesError } from '../errors';

/** One tool call of an assistant message. `arguments` is a JSON string (OpenAI) or an object. */
export interface ToolCall {
	id?: string;
	type?: 'function';
	function: { name: string; arguments: string | Record<string, unknown> };
}

/** A tool call without the `function` wrapper, which some templates (Qwen's) also take. */
export interface BareToolCall {
	name: string;
	arguments: string | Record<string, unknown>;
}

/** A content part of a multimodal message; templates see it as given. */
export interface ContentPart {
	type: string;
	text?: string;
	[key: string]: unknown;
}

export interface ChatMessage {
	/** 'system' | 'user' | 'assistant' | 'tool', or whatever else a template knows. */
	role: string;
	content?: string | ContentPart[] | null;
	tool_calls?: (ToolCall | BareToolCall)[];
	/** On role 'tool': the id of the call this result answers. */
	tool_call_id?: string;
	name?: string;
	/** Qwen3: the assistant's thinking, as an alternative to `<think>` inside content. */
	reasoning_content?: string | null;
	[key: string]: unknown;
}

/** An OpenAI function schema, passed to the template in the `tools` variable. */
export interface ToolSchema {
	type: 'function';
	function: { name: string; description?: string; parameters?: Record<string, unknown> };
	[key: string]: unknown;
}

function isRecord(x: unknown): x is Record<string, unknown> {
	return typeof x === 'object' && x !== null && !Array.isArray(x);
}

function describe(x: unknown): string {
	if (x === null) return 'null';
	if (Array.isArray(x)) return 'an array';
	return typeof x === 'object' ? 'an object' : `${typeof x} ${JSON.stringify(x)}`;
}

/** Throws ChatMessagesError unless `messages` is a non-empty list of OpenAI-shaped messages. */
export function validateMessages(messages: unknown): asserts messages is ChatMessage[] {
	if (!Array.isArray(messages) || messages.length === 0)
		throw new ChatMessagesError(
			`messages must be a non-empty array of {role, content} objects, got ${describe(messages)}.`
		);
	messages.forEach((m, i) => {
		const at = `messages[${i}]`;
		if (!isRecord(m)) throw new ChatMessagesError(`${at} must be an object, got ${describe(m)}.`);
		if (typeof m.role !== 'string' || m.role === '')
			throw new ChatMessagesError(
				`${at}.role must be a non-empty string ('system', 'user', 'assistant' or 'tool'), got ${describe(m.role)}.`
			);
		const c = m.content;
		if (c !== undefined && c !== null && typeof c !== 'string') {
			if (!Array.isArray(c) || !c.every((p) => isRecord(p) && typeof p.type === 'string'))
				throw new ChatMessagesError(
					`${at}.content must be a string, null, or an array of {type, ...} parts, got ${describe(c)}.`
				);
		}
		if (m.tool_calls !== undefined && m.tool_calls !== null) {
			if (!Array.isArray(m.tool_calls))
				throw new ChatMessagesError(
					`${at}.tool_calls must be an array, got ${describe(m.tool_calls)}.`
				);
			m.tool_calls.forEach((tc, j) => {
				const tat = `${at}.tool_calls[${j}]`;
				// OpenAI nests {name, arguments} in `function`; templates (Qwen's) also take them bare.
				const f = isRecord(tc) ? (isRecord(tc.function) ? tc.function : tc) : undefined;
				if (!f || !('name' in f) || !('arguments' in f))
					throw new ChatMessagesError(
						`${tat} must be {id, type: 'function', function: {name, arguments}}, got ${describe(tc)}.`
					);
				if (typeof f.name !== 'string' || f.name === '')
					throw new ChatMessagesError(`${tat}: the function name must be a non-empty string.`);
				const a = f.arguments;
				if (typeof a !== 'string' && !isRecord(a))
					throw new ChatMessagesError(
						`${tat}: arguments must be a JSON string or an object, got ${describe(a)}.`
					);
			});
		}
		if (m.tool_call_id !== undefined && typeof m.tool_call_id !== 'string')
			throw new ChatMessagesError(
				`${at}.tool_call_id must be a string, got ${describe(m.tool_call_id)}.`
			);
	});
}

/** Throws ChatMessagesError unless `tools` is a list of OpenAI function schemas (or absent). */
export function validateTools(tools: unknown): asserts tools is ToolSchema[] | undefined | null {
	if (tools === undefined || tools === null) return;
	if (!Array.isArray(tools))
		throw new ChatMessagesError(
			`tools must be an array of function schemas, got ${describe(tools)}.`
		);
	tools.forEach((t, i) => {
		// transformers accepts any dict here (and Python functions, which have no JS meaning).
		if (!isRecord(t))
			throw new ChatMessagesError(
				`tools[${i}] must be an object like {type: 'function', function: {name, description, parameters}}, got ${describe(t)}.`
			);
	});
}
