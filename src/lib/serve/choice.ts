/**
 * @file One choice's text as its tokens arrive: ids -> text (DecodeStream, special tokens
 * skipped) -> stop strings -> tool-call blocks (when the request has tools). Streamed and
 * plain requests use the same decoder, so they answer alike. Logprob entries: one per
 * sampled token (past a stop string too); `bytes` the token's UTF-8, or its raw byte-level
 * BPE bytes when it is part of a character; a non-finite logprob is written -9999.
 */
import type { ChatCompletionTokenLogprob } from 'openai/resources/chat/completions';
import type { DecodeStream } from '../model/tokenizer/decode-stream';
import type { TopLogprob } from '../model/generate/options';
import { bytesToUnicode } from '../model/tokenizer/byte-level';
import { StopStringMatcher } from './stop-strings';
import { ToolCallStream, type ParsedToolCall } from './tool-calls';

/** What the decoder needs of a Tokenizer (src/lib/model/tokenizer/tokenizer.ts). */
export interface TextDecoding {
	decode(ids: readonly number[], opts?: { skipSpecialTokens?: boolean }): string;
	decodeStream(opts?: { skipSpecialTokens?: boolean }): DecodeStream;
	idToToken(id: number): string | undefined;
}

export interface ChoiceOptions {
	stop: readonly string[];
	/** Parse <tool_call> blocks out of the content. */
	parseTools: boolean;
	/** Build OpenAI logprob entries. */
	logprobs: boolean;
	/** Alternatives per entry (top_logprobs, 0..20; the engine reports at least as many). */
	topLogprobs?: number;
	/** vLLM's return_tokens_as_token_ids: each entry's token is "token_id:N". */
	tokensAsIds?: boolean;
}

/** What one step (or the end) adds to a choice. */
export interface ChoiceDelta {
	content: string;
	calls: ParsedToolCall[];
	logprobs: ChatCompletionTokenLogprob[];
}

/** OpenAI's stand-in for a logprob of minus infinity. */
const LOGPROB_FLOOR = -9999;

let byteOf: Map<string, number> | undefined;
function byteLevelBytes(token: string): number[] | null {
	if (!byteOf) byteOf = new Map(bytesToUnicode().map((c, b) => [c, b]));
	const out: number[] = [];
	for (const ch of token) {
		const b = byteOf.get(ch);
		if (b === undefined) return null;
		out.push(b);
	}
	return out;
}

const utf8 = new TextEncoder();

/**
 * A token's text, bytes and logprob as OpenAI writes them (see the file comment); `asId`:
 * the text is "token_id:N" (vLLM's return_tokens_as_token_ids), its bytes those of that text.
 */
function tokenEntry(tokenizer: TextDecoding, id: number, logprob: number, asId = false) {
	const token = asId ? `token_id:${id}` : tokenizer.decode([id]);
	let bytes: number[] | null = Array.from(utf8.encode(token));
	if (token.includes('\uFFFD')) {
		const raw = tokenizer.idToToken(id);
		bytes = raw === undefined ? null : byteLevelBytes(raw);
	}
	return { token, bytes, logprob: Number.isFinite(logprob) ? logprob : LOGPROB_FLOOR };
}

/** The OpenAI logprob entry of one sampled token, with its step's most likely tokens. */
export function tokenLogprob(
	tokenizer: TextDecoding,
	id: number,
	logprob: number,
	top: readonly TopLogprob[] = [],
	asId = false
): ChatCompletionTokenLogprob {
	return {
		...tokenEntry(tokenizer, id, logprob, asId),
		top_logprobs: top.map((t) => tokenEntry(tokenizer, t.id, t.logprob, asId))
	};
}

export class ChoiceDecoder {
	private readonly text: DecodeStream;
	private readonly stops: StopStringMatcher;
	private readonly tools: ToolCallStream | null;
	/** Every id pushed, in order. */
	readonly ids: number[] = [];
	readonly logprobs: number[] = [];
	/** The OpenAI logprob entries made so far (when asked for). */
	readonly logprobEntries: ChatCompletionTokenLogprob[] = [];
	/** All content released so far. */
	content = '';
	readonly calls: ParsedToolCall[] = [];
	private ended = false;

	constructor(
		private readonly tokenizer: TextDecoding,
		private readonly options: ChoiceOptions
	) {
		this.text = tokenizer.decodeStream({ skipSpecialTokens: true });
		this.stops = new StopStringMatcher(options.stop);
		this.tools = options.parseTools ? new ToolCallStream() : null;
	}

	/** A stop string was found: the sequence should stop now. */
	get stoppedByString(): boolean {
		return this.stops.stopped;
	}

	private release(text: string, delta: ChoiceDelta): void {
		if (this.tools) {
			const out = this.tools.push(text);
			delta.content += out.content;
			delta.calls.push(...out.calls);
		} else delta.content += text;
	}

	private record(delta: ChoiceDelta): ChoiceDelta {
		this.content += delta.content;
		this.calls.push(...delta.calls);
		this.logprobEntries.push(...delta.logprobs);
		return delta;
	}

	/** Adds one sampled token (`top`: its step's most likely tokens, when asked for). */
	push(id: number, logprob: number, top?: readonly TopLogprob[]): ChoiceDelta {
		const delta: ChoiceDelta = { content: '', calls: [], logprobs: [] };
		this.ids.push(id);
		this.logprobs.push(logprob);
		if (this.options.logprobs) {
			const k = this.options.topLogprobs ?? 0;
			delta.logprobs.push(
				tokenLogprob(this.tokenizer, id, logprob, top?.slice(0, k), this.options.tokensAsIds)
			);
		}
		if (!this.stops.stopped) this.release(this.stops.push(this.text.push(id)).text, delta);
		return this.record(delta);
	}

	/**
	 * The sequence has ended: releases whatever was held back. `cut`: it ran out of tokens, so
	 * a tool-call block still open is a call cut short, dropped from the content (its tokens
	 * stay in the logprobs) rather than shown as template markup.
	 */
	finish(cut = false): ChoiceDelta {
		const delta: ChoiceDelta = { content: '', calls: [], logprobs: [] };
		if (this.ended) return delta;
		this.ended = true;
		if (!this.stops.stopped) {
			const last = this.stops.push(this.text.flush());
			this.release(last.text + this.stops.end(), delta);
		}
		if (this.tools) {
			const out = this.tools.end({ dropOpenBlock: cut });
			delta.content += out.content;
			delta.calls.push(...out.calls);
		}
		return this.record(delta);
	}
}
