/**
 * @file Tool calls in generated text as Qwen and Hermes templates teach them
 * (`<tool_call>\n{"name", "arguments"}\n</tool_call>`), parsed into OpenAI `tool_calls`.
 * A block that is not such an object stays in the content as written; an open block at the
 * end stays too, unless cut by max_tokens (then dropped). Whitespace next to a call goes
 * with it. ToolCallStream is incremental, and its pieces add up to `parseToolCalls`'s.
 */

export const TOOL_CALL_OPEN = '<tool_call>';
export const TOOL_CALL_CLOSE = '</tool_call>';

/** One parsed call; `arguments` is a JSON string, as OpenAI sends it. */
export interface ParsedToolCall {
	name: string;
	arguments: string;
}

/** What one push (or the end) releases: content safe to show, and calls completed. */
export interface ToolStreamOutput {
	content: string;
	calls: ParsedToolCall[];
}

/** The call in a block body, or null when it is not one. */
export function parseToolCallBody(body: string): ParsedToolCall | null {
	let json: unknown;
	try {
		json = JSON.parse(body);
	} catch {
		return null;
	}
	if (typeof json !== 'object' || json === null || Array.isArray(json)) return null;
	const { name } = json as { name?: unknown };
	if (typeof name !== 'string' || name === '') return null;
	const rec = json as Record<string, unknown>;
	const args = rec.arguments !== undefined ? rec.arguments : rec.parameters;
	if (args === undefined || args === null) return { name, arguments: '{}' };
	if (typeof args === 'string') return { name, arguments: args };
	if (typeof args === 'object' && !Array.isArray(args))
		return { name, arguments: JSON.stringify(args) };
	return null;
}

/** Length of the longest suffix of `text` that is a proper prefix of `tag`. */
export function partialTagLength(text: string, tag: string): number {
	for (let n = Math.min(tag.length - 1, text.length); n > 0; n--)
		if (text.endsWith(tag.slice(0, n))) return n;
	return 0;
}

const trailingSpace = (s: string) => s.length - s.trimEnd().length;

export class ToolCallStream {
	/** Text not released yet (outside a block). */
	private pending = '';
	/** Inside a block: the whitespace held before it, and the body so far. */
	private block: { space: string; body: string } | null = null;
	/** After a well-formed block: drop whitespace until the next other character. */
	private skipSpace = false;

	push(text: string): ToolStreamOutput {
		const out: ToolStreamOutput = { content: '', calls: [] };
		let rest = text;
		for (;;) {
			if (this.block) {
				this.block.body += rest;
				rest = '';
				const end = this.block.body.indexOf(TOOL_CALL_CLOSE);
				if (end < 0) return out;
				const body = this.block.body.slice(0, end);
				rest = this.block.body.slice(end + TOOL_CALL_CLOSE.length);
				const call = parseToolCallBody(body.trim());
				if (call) {
					out.calls.push(call);
					this.skipSpace = true;
				} else out.content += this.block.space + TOOL_CALL_OPEN + body + TOOL_CALL_CLOSE;
				this.block = null;
				continue;
			}
			this.pending += rest;
			rest = '';
			if (this.skipSpace) {
				const trimmed = this.pending.trimStart();
				if (trimmed !== '') this.skipSpace = false;
				this.pending = trimmed;
			}
			const open = this.pending.indexOf(TOOL_CALL_OPEN);
			if (open >= 0) {
				const before = this.pending.slice(0, open);
				const space = trailingSpace(before);
				out.content += before.slice(0, before.length - space);
				this.block = { space: before.slice(before.length - space), body: '' };
				rest = this.pending.slice(open + TOOL_CALL_OPEN.length);
				this.pending = '';
				continue;
			}
			// Hold back what may still become "<tool_call>" and the whitespace before it.
			const partial = partialTagLength(this.pending, TOOL_CALL_OPEN);
			const head = this.pending.slice(0, this.pending.length - partial);
			const keep = trailingSpace(head) + partial;
			out.content += this.pending.slice(0, this.pending.length - keep);
			this.pending = this.pending.slice(this.pending.length - keep);
			return out;
		}
	}

	/**
	 * Releases everything held: the text is complete. A block still open stays in the content
	 * as written, unless `dropOpenBlock` (a reply cut by max_tokens: a call cut short, not text).
	 */
	end({ dropOpenBlock = false }: { dropOpenBlock?: boolean } = {}): ToolStreamOutput {
		// (After a block, push has already dropped whitespace-only pending text.)
		const content = this.block
			? dropOpenBlock
				? ''
				: this.block.space + TOOL_CALL_OPEN + this.block.body
			: this.pending;
		this.block = null;
		this.pending = '';
		return { content, calls: [] };
	}
}

/** The calls in a whole text, and the content outside them (null when only calls). */
export function parseToolCalls(text: string): { content: string | null; calls: ParsedToolCall[] } {
	const stream = new ToolCallStream();
	const a = stream.push(text);
	const b = stream.end();
	const content = a.content + b.content;
	const calls = [...a.calls, ...b.calls];
	return { content: content === '' && calls.length ? null : content, calls };
}
