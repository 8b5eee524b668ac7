/**
 * @file The inbox agent's three tools, as OpenAI function schemas (what the model is shown)
 * and as code (what a call does). ART-E's set: search, read, answer.
 *
 * - search_inbox({keywords: string[]}): the SEARCH_LIMIT best emails by BM25 (search.ts), as
 *   a JSON array of {message_id, from (the sender's name), subject}; `[]` when nothing
 *   matches. No body: the answer is only in the email, so the agent has to read it.
 * - read_email({message_id: string}): the email as JSON {message_id, from, date, subject,
 *   body}, or {"error": "no email with id ..."} for an id no email has.
 * - return_final_answer({answer: string, reference_message_ids: string[]}): ends the episode.
 *
 * Arguments are checked as a typed function's would be: a JSON object with every required
 * property of the right type ("bad_arguments" otherwise: not JSON, not an object, missing or
 * ill-typed); properties not in the schema are ignored. A name not in TOOLS is
 * "unknown_tool". Tool results are compact JSON (no spaces), short for a small context.
 */
import type { ChatCompletionTool } from 'openai/resources/chat/completions';
import { emailRecord, type Mailbox } from './mailbox';
import type { InboxIndex } from './search';

export const TOOLS: ChatCompletionTool[] = [
	{
		type: 'function',
		function: {
			name: 'search_inbox',
			description: 'Search the inbox by keywords. Returns the 5 best matching emails.',
			parameters: {
				type: 'object',
				properties: { keywords: { type: 'array', items: { type: 'string' } } },
				required: ['keywords']
			}
		}
	},
	{
		type: 'function',
		function: {
			name: 'read_email',
			description: 'Read one email by its message id.',
			parameters: {
				type: 'object',
				properties: { message_id: { type: 'string' } },
				required: ['message_id']
			}
		}
	},
	{
		type: 'function',
		function: {
			name: 'return_final_answer',
			description: "Give the final answer and the ids of the emails it is from, or I don't know.",
			parameters: {
				type: 'object',
				properties: {
					answer: { type: 'string' },
					reference_message_ids: { type: 'array', items: { type: 'string' } }
				},
				required: ['answer', 'reference_message_ids']
			}
		}
	}
];

export const TOOL_NAMES = ['search_inbox', 'read_email', 'return_final_answer'] as const;
export type ToolName = (typeof TOOL_NAMES)[number];

/** A call with checked arguments. */
export type InboxToolCall =
	| { name: 'search_inbox'; keywords: string[] }
	| { name: 'read_email'; message_id: string }
	| { name: 'return_final_answer'; answer: string; reference_message_ids: string[] };

export type CheckedCall =
	| { ok: true; call: InboxToolCall }
	| { ok: false; error: 'unknown_tool' | 'bad_arguments'; detail: string };

const isStrings = (v: unknown): v is string[] =>
	Array.isArray(v) && v.every((s) => typeof s === 'string');

/** The call of `name` with JSON `args`, checked (see the file's doc). */
export function checkCall(name: string, args: string): CheckedCall {
	if (!(TOOL_NAMES as readonly string[]).includes(name))
		return { ok: false, error: 'unknown_tool', detail: `no tool named ${JSON.stringify(name)}` };
	let a: unknown;
	try {
		a = JSON.parse(args);
	} catch {
		return { ok: false, error: 'bad_arguments', detail: `arguments are not JSON: ${args}` };
	}
	if (typeof a !== 'object' || a === null || Array.isArray(a))
		return { ok: false, error: 'bad_arguments', detail: `arguments are not an object: ${args}` };
	const r = a as Record<string, unknown>;
	const bad = (what: string): CheckedCall => ({
		ok: false,
		error: 'bad_arguments',
		detail: `${name} needs ${what}: ${args}`
	});
	switch (name as ToolName) {
		case 'search_inbox':
			return isStrings(r.keywords)
				? { ok: true, call: { name: 'search_inbox', keywords: r.keywords } }
				: bad('keywords, an array of strings');
		case 'read_email':
			return typeof r.message_id === 'string'
				? { ok: true, call: { name: 'read_email', message_id: r.message_id } }
				: bad('message_id, a string');
		case 'return_final_answer':
			if (typeof r.answer !== 'string') return bad('answer, a string');
			if (!isStrings(r.reference_message_ids))
				return bad('reference_message_ids, an array of strings');
			return {
				ok: true,
				call: {
					name: 'return_final_answer',
					answer: r.answer,
					reference_message_ids: r.reference_message_ids
				}
			};
	}
}

/** search_inbox's result text and the ids it lists. */
export function searchInbox(index: InboxIndex, keywords: readonly string[]) {
	const hits = index.search(keywords);
	const results = hits.map(({ email }) => ({
		message_id: email.id,
		from: email.fromName,
		subject: email.subject
	}));
	return { content: JSON.stringify(results), ids: hits.map((h) => h.email.id) };
}

/** read_email's result text, and whether the id was an email's. */
export function readEmail(mailbox: Mailbox, messageId: string) {
	const email = mailbox.byId.get(messageId);
	return email
		? { content: JSON.stringify(emailRecord(email)), found: true }
		: { content: JSON.stringify({ error: `no email with id ${messageId}` }), found: false };
}
