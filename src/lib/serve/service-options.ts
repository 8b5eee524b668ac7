/**
 * @file The ChatService's options and its transport-free request and response shapes.
 */
import type { ChatEngine } from './engine';
import type { VocabularySource } from '../model/constrain/vocabulary';
import type { TextDecoding } from './choice';
import type { AdmissionLimits } from './admission';
import type { ChatEncoding, PieceEncoder } from './prompt';
import type { RequestLimits } from './request';
import type { SchedulerOptions } from './scheduler';

/** What the service needs of a Tokenizer (src/lib/model/tokenizer/tokenizer.ts satisfies it); the
 * vocabulary is needed only for constrained requests (response_format, tool_choice). */
export type ServiceTokenizer = ChatEncoding & TextDecoding & Partial<VocabularySource>;

export interface ChatServiceOptions {
	engine: ChatEngine;
	tokenizer: ServiceTokenizer;
	/** The model name requests must give (and GET /v1/models lists). */
	model: string;
	/** Prompt + new tokens at most (default and cap: the engine's contextLength). */
	contextLength?: number;
	limits?: RequestLimits;
	scheduler?: SchedulerOptions;
	/** Caps on requests and tokens held at once (default: none). */
	admission?: AdmissionLimits;
	/** Longest a request may take, from arrival to its last token (default: none). */
	deadlineMs?: number;
	/** Tokenizes a prompt's long pieces off the event loop (default: none, all inline). The
	 * caller owns it (closes it with its server). */
	pieceEncoder?: PieceEncoder;
	/**
	 * Whether each choice carries TabRL's `tabrl` token record (default true: the in-process
	 * clients train on it). A server for other clients sends none: they ask for vLLM's
	 * `return_token_ids` instead.
	 */
	tokenRecords?: boolean;
	/**
	 * Chat-template variables of every request unless it sets them itself (vLLM's
	 * --default-chat-template-kwargs), e.g. Qwen3's `{ enable_thinking: false }`.
	 */
	templateDefaults?: Record<string, unknown>;
}

/** A transport-free request: method, path (e.g. '/v1/models'), body text. */
export interface ServiceRequest {
	method: string;
	path: string;
	body?: string;
	/** The body already parsed (an in-process caller: direct-completions.ts), used over `body`. */
	json?: unknown;
	signal?: AbortSignal;
}

/** A JSON answer (with extra headers, e.g. a 429's retry-after), or (200 only) a stream of
 * SSE frames (`data: ...\n\n`). */
export type ServiceResponse =
	| { status: number; json: unknown; headers?: Record<string, string> }
	| { status: 200; sse: AsyncIterable<string> };
