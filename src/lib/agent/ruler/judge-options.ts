/**
 * @file A RULER judge's options (an endpoint, or an OpenAI-like client already made), the
 * part of a client it uses, and what it reports: each answer's cost and the running stats.
 */
import type {
	ChatCompletion,
	ChatCompletionCreateParamsNonStreaming
} from 'openai/resources/chat/completions';
import type { ResponseFormatJSONSchema } from 'openai/resources/shared';

/** Request options the official client takes per call (others may ignore them). */
export interface JudgeRequestOptions {
	signal?: AbortSignal;
	timeout?: number;
	maxRetries?: number;
}

/** The part of an OpenAI client a judge uses. */
export interface JudgeClient {
	baseURL?: string;
	chat: {
		completions: {
			create(
				body: ChatCompletionCreateParamsNonStreaming,
				options?: JudgeRequestOptions
			): PromiseLike<ChatCompletion>;
		};
	};
}

export interface JudgeCommon {
	/** The judge model's name, sent as `model`. */
	model: string;
	/**
	 * Fields added to every request body (temperature, max_tokens, reasoning_effort,
	 * OpenRouter's provider routing, ...); they override RULER's `response_format` (e.g.
	 * `{response_format: {type: 'json_object'}}` for an endpoint without json_schema), never
	 * `model` or `messages`.
	 */
	extraBody?: Record<string, unknown>;
	/** Per attempt, in ms. Default for an endpoint: 300 000 (a reasoning judge is slow). */
	timeoutMs?: number;
	/** Retries after the first attempt (429, 5xx, timeouts, connection). Endpoint default 3. */
	maxRetries?: number;
	/** Requests in flight to this judge at most. Default 8. */
	concurrency?: number;
	/**
	 * The response format asked for: 'art' (default, ART's schema, strict), 'exact' (narrowed
	 * to each request's trajectories: schema.ts exactResponseFormat; what a local judge
	 * should use), or a function of the ids sent.
	 */
	responseFormat?: 'art' | 'exact' | ((ids: readonly string[]) => ResponseFormatJSONSchema);
}

/** An OpenAI-compatible endpoint. */
export interface JudgeEndpoint extends JudgeCommon {
	/** e.g. https://api.openai.com/v1, https://openrouter.ai/api/v1, http://localhost:11434/v1 */
	baseURL: string;
	/** Sent as the bearer token; a placeholder when absent (local servers need none). */
	apiKey?: string;
}

/** A client already made: the local engine's `openaiClient()`, or any OpenAI-like object. */
export interface JudgeWithClient extends JudgeCommon {
	client: JudgeClient;
}

export type JudgeOptions = JudgeEndpoint | JudgeWithClient;

/** Cumulative over every request to one judge. */
export interface JudgeStats {
	/** Requests that came back with a completion. */
	requests: number;
	/** Requests that failed for good (after the client's retries). */
	failedRequests: number;
	latencyMs: number;
	promptTokens: number;
	completionTokens: number;
	/** Sum of `usage.cost` where the endpoint reports it (OpenRouter: USD). */
	cost: number;
	/** Replies that did not validate (each one counts, a re-asked one too). */
	invalidReplies: number;
	/** Corrective re-asks sent. */
	reasks: number;
	/** Groups (or ruler() calls) that ended with scores, and that ended in an error. */
	scored: number;
	failed: number;
}

/** One answer of the judge, with what it cost. */
export interface JudgeAnswer {
	content: string | null;
	finishReason: string | null;
	refusal: string | null;
	latencyMs: number;
	promptTokens?: number;
	completionTokens?: number;
	cost?: number;
}
