/**
 * @file A chat request's prompt: messages and tools through the chat template, tokenized
 * with nothing added, then checked against the context (prompt + at least one token;
 * max_tokens past what is left is an error, absent it is what is left). `encodePrompt`
 * tokenizes part by part, yielding every SLICE_BUDGET_MS and stopping past the context;
 * with a PieceEncoder (cli serve's thread) long pieces go off the event loop, abortable.
 */
import type { ChatMessage, ToolSchema } from '../model/tokenizer/chat-messages';
import type { ChatTemplateOptions } from '../model/tokenizer/chat-template';
import { invalidRequest } from './errors';
import type { ChatRequest } from './request';

/** What prompt building needs of a Tokenizer (src/lib/model/tokenizer/tokenizer.ts); the optional
 * methods let encodePrompt work part by part. */
export interface ChatEncoding {
	encodeChat(messages: ChatMessage[], opts?: ChatTemplateOptions): number[];
	applyChatTemplate?(messages: ChatMessage[], opts?: ChatTemplateOptions): string;
	/** The text cut at special tokens: a token's id, or a piece for encodePiece. */
	parts?(text: string): Iterable<number | string>;
	encodePiece?(piece: string): number[];
}

/** Long pieces tokenized off the event loop, as encodePiece would (OffThreadPieceEncoder in
 * src/lib/model/tokenizer/node/tokenizer-thread.ts, built from the same tokenizer files). */
export interface PieceEncoder {
	/** Pieces at least this long go here; shorter ones are tokenized inline. */
	readonly minChars: number;
	/** The piece's ids; rejects with the signal's reason once it aborts (the work stopped). */
	encode(piece: string, signal?: AbortSignal): Promise<ArrayLike<number>>;
}

export interface EncodePromptOptions {
	pieceEncoder?: PieceEncoder;
	/** The request's: once aborted, tokenizing stops and its reason is thrown. */
	signal?: AbortSignal;
}

/** Longest stretch of tokenizing between yields to the event loop. */
const SLICE_BUDGET_MS = 10;

const yieldToEventLoop = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

type PromptRequest = Pick<ChatRequest, 'messages' | 'tools' | 'chatTemplateKwargs' | 'maxTokens'>;

export interface Prompt {
	ids: number[];
	/** New tokens per choice at most. */
	maxTokens: number;
}

/** The template options of a request (tools only when tool_choice is not 'none'). */
export function templateOptions(
	tools: ToolSchema[] | undefined,
	chatTemplateKwargs: Record<string, unknown>
): ChatTemplateOptions {
	return { tools, addGenerationPrompt: true, vars: chatTemplateKwargs };
}

function overContext(contextLength: number, tokens: string): Error {
	return invalidRequest(
		`This model's maximum context length is ${contextLength} tokens. However, your messages ` +
			`resulted in ${tokens} tokens, which leaves no room for a reply. Please reduce ` +
			'the length of the messages.',
		'messages',
		'context_length_exceeded'
	);
}

export function buildPrompt(
	tokenizer: ChatEncoding,
	request: PromptRequest,
	contextLength: number
): Prompt {
	const ids = tokenizer.encodeChat(
		request.messages,
		templateOptions(request.tools, request.chatTemplateKwargs)
	);
	return fitPrompt(ids, request, contextLength);
}

/** buildPrompt's ids, tokenized part by part with yields (long pieces on the PieceEncoder
 * when given), stopping once past the context or once the signal aborts. */
export async function encodePrompt(
	tokenizer: ChatEncoding,
	request: PromptRequest,
	contextLength: number,
	{ pieceEncoder, signal }: EncodePromptOptions = {}
): Promise<Prompt> {
	signal?.throwIfAborted();
	if (!tokenizer.applyChatTemplate || !tokenizer.parts || !tokenizer.encodePiece)
		return buildPrompt(tokenizer, request, contextLength);
	const text = tokenizer.applyChatTemplate(
		request.messages,
		templateOptions(request.tools, request.chatTemplateKwargs)
	);
	const ids: number[] = [];
	let since = performance.now();
	for (const part of tokenizer.parts(text)) {
		const slice: ArrayLike<number> =
			typeof part === 'number'
				? [part]
				: pieceEncoder && part.length >= pieceEncoder.minChars
					? await pieceEncoder.encode(part, signal)
					: tokenizer.encodePiece(part);
		// Counted before copied: a piece far past the context is not copied.
		if (ids.length + slice.length >= contextLength)
			throw overContext(contextLength, `at least ${ids.length + slice.length}`);
		for (let i = 0; i < slice.length; i++) ids.push(slice[i]);
		if (performance.now() - since > SLICE_BUDGET_MS) {
			await yieldToEventLoop();
			signal?.throwIfAborted();
			since = performance.now();
		}
	}
	return fitPrompt(ids, request, contextLength);
}

/** The context check: the prompt and one new token fit, and max_tokens fits what is left. */
function fitPrompt(ids: number[], request: PromptRequest, contextLength: number): Prompt {
	const room = contextLength - ids.length;
	if (room < 1) throw overContext(contextLength, String(ids.length));
	if (request.maxTokens !== undefined && request.maxTokens > room)
		throw invalidRequest(
			`This model's maximum context length is ${contextLength} tokens. However, you requested ` +
				`${ids.length + request.maxTokens} tokens (${ids.length} in the messages, ` +
				`${request.maxTokens} in the completion). Please reduce the length of the messages ` +
				'or the completion.',
			'messages',
			'context_length_exceeded'
		);
	return { ids, maxTokens: request.maxTokens ?? room };
}
