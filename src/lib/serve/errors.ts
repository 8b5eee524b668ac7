/**
 * @file Errors of the OpenAI-compatible layer, in OpenAI's wire shape:
 * `{"error": {"message", "type", "param", "code"}}` with an HTTP status. Request problems are
 * 400 `invalid_request_error`; an unknown model or route 404; a wrong method 405; anything
 * the engine throws that is not the caller's fault is 500 `server_error`. The model layer's
 * typed errors that describe bad input (messages, chat template, context length) become 400.
 */

/** OpenAI answers an unknown model or URL with 404 and type invalid_request_error too; a
 * rate limit is type 'requests' or 'tokens' (which limit was hit). */
export type OpenAIErrorType = 'invalid_request_error' | 'server_error' | 'requests' | 'tokens';

/** The body OpenAI sends with a failed request. */
export interface OpenAIErrorBody {
	error: { message: string; type: string; param: string | null; code: string | null };
}

export class OpenAIApiError extends Error {
	readonly kind = 'openai-api';
	constructor(
		readonly status: number,
		message: string,
		readonly type: OpenAIErrorType = 'invalid_request_error',
		readonly param: string | null = null,
		readonly code: string | null = null
	) {
		super(message);
		this.name = 'OpenAIApiError';
	}

	toBody(): OpenAIErrorBody {
		const { message, type, param, code } = this;
		return { error: { message, type, param, code } };
	}
}

/** 429: the server is at its cap on requests or tokens in flight (admission.ts). The client
 * may retry after `retryAfterSeconds` (sent as Retry-After; the openai client obeys it). */
export class OverloadedError extends OpenAIApiError {
	constructor(
		message: string,
		type: 'requests' | 'tokens',
		readonly retryAfterSeconds: number
	) {
		super(429, message, type, null, 'rate_limit_exceeded');
		this.name = 'OverloadedError';
	}
}

/** 504: the request ran past the server's per-request deadline; its decoding was stopped. */
export class DeadlineError extends OpenAIApiError {
	constructor(readonly deadlineMs: number) {
		super(
			504,
			`The request took longer than this server's deadline of ${deadlineMs / 1000} s and was ` +
				'stopped. Ask for fewer tokens (max_tokens, n), or raise the deadline (serve --request-timeout).',
			'server_error',
			null,
			'timeout'
		);
		this.name = 'DeadlineError';
	}
}

/** 400 invalid_request_error about one request field (`param`, e.g. 'messages[2].role'). */
export function invalidRequest(
	message: string,
	param: string | null = null,
	code: string | null = null
): OpenAIApiError {
	return new OpenAIApiError(400, message, 'invalid_request_error', param, code);
}

/** Model-layer error kinds (src/lib/model/errors.ts) that mean the request was bad. */
const BAD_INPUT_KINDS: Record<string, { param: string | null; code: string | null }> = {
	'chat-messages': { param: 'messages', code: null },
	'chat-template': { param: 'messages', code: null },
	'no-chat-template': { param: 'messages', code: null },
	tokenizer: { param: 'messages', code: null },
	'context-length': { param: 'messages', code: 'context_length_exceeded' },
	'generation-options': { param: null, code: null }
};

/**
 * Any thrown value as an OpenAIApiError: itself, a model-layer input error as 400, anything
 * else as 500 server_error (its message kept: this is a local server, the caller is its
 * owner and needs the reason).
 */
export function toApiError(error: unknown): OpenAIApiError {
	if (error instanceof OpenAIApiError) return error;
	const e = error as { kind?: unknown; message?: unknown } | null;
	const message = typeof e?.message === 'string' ? e.message : String(error);
	const bad =
		typeof e?.kind === 'string' && Object.hasOwn(BAD_INPUT_KINDS, e.kind)
			? BAD_INPUT_KINDS[e.kind]
			: undefined;
	if (bad) return invalidRequest(message, bad.param, bad.code);
	return new OpenAIApiError(500, message, 'server_error');
}
