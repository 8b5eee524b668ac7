/**
 * @file The judge RULER asks: any OpenAI-compatible chat completions endpoint, through the
 * official `openai` client (OpenAI, OpenRouter, Ollama, vLLM, LM Studio, TabRL's own
 * `serve`), or an OpenAI-like client object already made (e.g. the local engine's
 * `openaiClient()`, or any object with `chat.completions.create`).
 *
 * - Retries and timeouts are the `openai` client's own: a request that times out, a 408,
 *   409, 429 or 5xx answer and a failed connection are retried up to `maxRetries` times
 *   with exponential backoff (0.5 s doubling to 8 s, with jitter), or after the delay a
 *   `retry-after` / `retry-after-ms` header asks for; `timeoutMs` bounds each attempt. A
 *   given client keeps its own settings unless `timeoutMs` / `maxRetries` are given here
 *   (then they are passed as request options, which the official client honours).
 * - `concurrency` caps the requests in flight to this judge across every ruler() and
 *   rulerScoreGroup() call that shares it: share it by passing the same Judge, or the same
 *   options object (one Judge is made per object, see judgeFor).
 * - `stats` adds up what the judge cost: requests, failures, latency, tokens, and the cost
 *   where the endpoint reports it (`usage.cost`, as OpenRouter does).
 *
 * The API key goes only into the client's Authorization header: it is not in any message,
 * error or stat here.
 *
 * In a browser the judge is called from the tab's worker, across origins: a judge that does
 * not answer CORS preflights fails exactly as one that is down ("Failed to fetch"), so a
 * connection error there says both, and what to do (`corsAdvice`). `check()` asks the
 * endpoint for its models (no tokens) so a run learns this before its first rollout.
 */
import OpenAI, {
	APIConnectionTimeoutError,
	APIConnectionError,
	APIError,
	APIUserAbortError
} from 'openai';
import type {
	ChatCompletion,
	ChatCompletionCreateParamsNonStreaming,
	ChatCompletionMessageParam
} from 'openai/resources/chat/completions';
import { JudgeRequestError, RulerOptionsError } from './errors';
import type { ResponseFormatJSONSchema } from 'openai/resources/shared';
import { exactResponseFormat, RESPONSE_FORMAT } from './schema';

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

interface JudgeCommon {
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

const PLACEHOLDER_KEY = 'no-key';
/** `check()`'s wait for an answer, per attempt: a model listing is quick when there is one. */
const CHECK_TIMEOUT_MS = 30_000;

/**
 * The origin of the page or worker this code runs in (e.g. 'https://tabrl.example'), or null
 * outside a browser. A browser is a scope with a `document` (a page) or a WorkerGlobalScope
 * (a worker); Node has neither (Node >= 21's `navigator` is not enough). `scope` is for tests.
 */
export function browserOrigin(scope: object = globalThis): string | null {
	const g = scope as {
		document?: unknown;
		WorkerGlobalScope?: unknown;
		location?: { origin?: unknown };
	};
	if (typeof g.document === 'undefined' && typeof g.WorkerGlobalScope === 'undefined') return null;
	const origin = g.location?.origin;
	return typeof origin === 'string' && origin !== 'null' ? origin : 'this page';
}

/**
 * What a failed connection means in a browser, besides a judge that is down: the browser
 * refused the answer because the judge does not allow requests from `origin` (CORS), and
 * how each common judge is told to allow them.
 */
export function corsAdvice(origin: string): string {
	return (
		` In a browser a judge that refuses cross-origin requests (CORS) looks the same: it must` +
		` allow requests from ${origin}. Ollama: start it with OLLAMA_ORIGINS=${origin};` +
		` vLLM: --allowed-origins '["${origin}"]'; LM Studio: turn on "Enable CORS" in its server` +
		` settings; any other: put a proxy in front of it that answers preflights with` +
		` Access-Control-Allow-Origin. OpenAI and OpenRouter accept requests from browsers.` +
		` (An https page also cannot call a plain-http judge that is not on this machine.)`
	);
}
const DEFAULT_TIMEOUT_MS = 300_000;
const DEFAULT_MAX_RETRIES = 3;
const DEFAULT_CONCURRENCY = 8;

function checkCount(name: string, v: number | undefined, min: number): void {
	if (v === undefined) return;
	if (!(v >= min) || (Number.isFinite(v) && !Number.isInteger(v)))
		throw new RulerOptionsError(`judge.${name}`, `is ${v}; give an integer >= ${min}`);
}

/** A judge: one client, one concurrency limit, one set of stats. */
export class Judge {
	readonly model: string;
	readonly extraBody: Record<string, unknown>;
	readonly concurrency: number;
	readonly responseFormat: NonNullable<JudgeCommon['responseFormat']>;
	/** "judge 'MODEL' at URL", for messages. */
	readonly label: string;
	readonly stats: JudgeStats = {
		requests: 0,
		failedRequests: 0,
		latencyMs: 0,
		promptTokens: 0,
		completionTokens: 0,
		cost: 0,
		invalidReplies: 0,
		reasks: 0,
		scored: 0,
		failed: 0
	};
	private readonly client: JudgeClient;
	/** The client this judge made for its endpoint (null for a given client). */
	private readonly endpoint: OpenAI | null = null;
	private readonly requestOptions: JudgeRequestOptions;
	private readonly timeoutMs: number | undefined;
	private readonly maxRetries: number | undefined;
	private running = 0;
	private readonly waiting: (() => void)[] = [];

	constructor(options: JudgeOptions) {
		if (typeof options !== 'object' || options === null)
			throw new RulerOptionsError('judge', 'is missing; give {baseURL, model} or {client, model}');
		if (typeof options.model !== 'string' || !options.model)
			throw new RulerOptionsError('judge.model', 'is missing: name the judge model');
		checkCount('timeoutMs', options.timeoutMs, 1);
		checkCount('maxRetries', options.maxRetries, 0);
		checkCount('concurrency', options.concurrency, 1);
		this.model = options.model;
		this.extraBody = { ...(options.extraBody ?? {}) };
		this.concurrency = options.concurrency ?? DEFAULT_CONCURRENCY;
		const format = options.responseFormat ?? 'art';
		if (format !== 'art' && format !== 'exact' && typeof format !== 'function')
			throw new RulerOptionsError(
				'judge.responseFormat',
				`is ${JSON.stringify(format)}; give 'art', 'exact' or a function of the ids`
			);
		this.responseFormat = format;
		if ('client' in options) {
			if (typeof options.client?.chat?.completions?.create !== 'function')
				throw new RulerOptionsError('judge.client', 'has no chat.completions.create');
			this.client = options.client;
			// A given client keeps its own retry and timeout settings unless told otherwise.
			this.requestOptions = {
				...(options.timeoutMs !== undefined ? { timeout: options.timeoutMs } : {}),
				...(options.maxRetries !== undefined ? { maxRetries: options.maxRetries } : {})
			};
			this.timeoutMs = options.timeoutMs;
			this.maxRetries = options.maxRetries;
		} else {
			if (typeof options.baseURL !== 'string' || !options.baseURL)
				throw new RulerOptionsError('judge.baseURL', 'is missing: give the endpoint URL');
			this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
			this.maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES;
			this.endpoint = new OpenAI({
				baseURL: options.baseURL,
				apiKey: options.apiKey || PLACEHOLDER_KEY,
				timeout: this.timeoutMs,
				maxRetries: this.maxRetries,
				// The client refuses to run in a browser unless told, because a key shipped in a
				// site's code is anyone's. Not so here: the key is the user's own, typed into their
				// own tab, held in memory (or this tab's sessionStorage), and sent only to the judge
				// they chose; no server of ours sees it.
				dangerouslyAllowBrowser: true
			});
			this.client = this.endpoint;
			this.requestOptions = {};
		}
		const url = 'client' in options ? options.client.baseURL : options.baseURL;
		this.label = `judge '${this.model}'${url ? ` at ${url}` : ''}`;
	}

	/**
	 * One request with RULER's response format for the trajectories `ids` (the option's:
	 * ART's by default); waits for a slot of `concurrency`.
	 */
	async complete(
		messages: ChatCompletionMessageParam[],
		signal?: AbortSignal,
		ids: readonly string[] = []
	): Promise<JudgeAnswer> {
		await this.acquire(signal);
		const t0 = performance.now();
		try {
			const format = this.responseFormat;
			const body = {
				response_format:
					format === 'exact'
						? exactResponseFormat(ids)
						: typeof format === 'function'
							? format(ids)
							: RESPONSE_FORMAT,
				...this.extraBody,
				model: this.model,
				messages
			} as ChatCompletionCreateParamsNonStreaming;
			let completion: ChatCompletion;
			try {
				completion = await this.client.chat.completions.create(body, {
					...this.requestOptions,
					...(signal ? { signal } : {})
				});
			} catch (error) {
				if (signal?.aborted) throw signal.reason;
				this.stats.failedRequests++;
				throw this.requestError(error);
			}
			const latencyMs = performance.now() - t0;
			this.stats.requests++;
			this.stats.latencyMs += latencyMs;
			const choice = completion?.choices?.[0];
			const usage = completion?.usage as (ChatCompletion['usage'] & { cost?: unknown }) | undefined;
			const answer: JudgeAnswer = {
				content: typeof choice?.message?.content === 'string' ? choice.message.content : null,
				finishReason: choice?.finish_reason ?? null,
				refusal: choice?.message?.refusal ?? null,
				latencyMs
			};
			if (usage && Number.isFinite(usage.prompt_tokens)) {
				answer.promptTokens = usage.prompt_tokens;
				this.stats.promptTokens += usage.prompt_tokens;
			}
			if (usage && Number.isFinite(usage.completion_tokens)) {
				answer.completionTokens = usage.completion_tokens;
				this.stats.completionTokens += usage.completion_tokens;
			}
			if (typeof usage?.cost === 'number' && Number.isFinite(usage.cost)) {
				answer.cost = usage.cost;
				this.stats.cost += usage.cost;
			}
			return answer;
		} finally {
			this.release();
		}
	}

	/**
	 * Whether the endpoint can be reached and takes the key, before a run spends minutes on
	 * rollouts: lists its models (GET /models: no tokens spent), one retry, `timeoutMs` at most
	 * per attempt. Throws the JudgeRequestError a judging request would get for a connection
	 * failure (in a browser: or CORS), a timeout, or a 401 / 403; any other answer passes (an
	 * endpoint that lists no models answers 404: the first judging request will tell). A judge
	 * given as a client passes unasked.
	 */
	async check(signal?: AbortSignal, timeoutMs = CHECK_TIMEOUT_MS): Promise<void> {
		if (!this.endpoint) return;
		const limits = {
			timeoutMs: Math.min(timeoutMs, this.timeoutMs ?? timeoutMs),
			maxRetries: Math.min(1, this.maxRetries ?? 1)
		};
		try {
			await this.endpoint.models.list({
				timeout: limits.timeoutMs,
				maxRetries: limits.maxRetries,
				...(signal ? { signal } : {})
			});
		} catch (error) {
			if (signal?.aborted) throw signal.reason;
			if (error instanceof APIError && typeof error.status === 'number') {
				if (error.status !== 401 && error.status !== 403) return;
			}
			throw this.requestError(error, limits);
		}
	}

	private requestError(
		error: unknown,
		limits: { timeoutMs?: number; maxRetries?: number } = {
			timeoutMs: this.timeoutMs,
			maxRetries: this.maxRetries
		}
	): JudgeRequestError {
		const { timeoutMs, maxRetries } = limits;
		const tries =
			maxRetries === undefined ? '' : ` (${maxRetries + 1} attempt${maxRetries ? 's' : ''})`;
		if (error instanceof APIConnectionTimeoutError)
			return new JudgeRequestError(
				'timeout',
				this.label,
				undefined,
				`did not answer within ${timeoutMs ?? "the client's timeout"} ms${tries}. ` +
					'Raise timeoutMs, or use a faster judge.',
				error
			);
		if (error instanceof APIUserAbortError)
			return new JudgeRequestError('other', this.label, undefined, 'request was aborted', error);
		if (error instanceof APIConnectionError) {
			const origin = browserOrigin();
			return new JudgeRequestError(
				'connection',
				this.label,
				undefined,
				`could not be reached${tries}: ${error.message}` +
					(error.cause instanceof Error ? ` (${error.cause.message})` : '') +
					'. Check the base URL and that the server is running.' +
					(origin ? corsAdvice(origin) : ''),
				error
			);
		}
		if (error instanceof APIError && typeof error.status === 'number') {
			const advice =
				error.status === 401 || error.status === 403
					? ` Check the API key (${browserOrigin() ? 'the one typed in for the judge' : 'its environment variable'}).`
					: error.status === 404
						? ' Check the base URL (it usually ends in /v1) and the model name.'
						: error.status === 400
							? ' The endpoint may not support json_schema response formats; try extraBody {response_format: {type: "json_object"}}.'
							: error.status === 429 || error.status >= 500
								? ` Still failing after the retries; raise maxRetries or try later.`
								: '';
			// (the client retries 408, 409, 429 and 5xx only: another status was asked once)
			const retried = [408, 409, 429].includes(error.status) || error.status >= 500 ? tries : '';
			return new JudgeRequestError(
				'http',
				this.label,
				error.status,
				`answered HTTP ${error.status}${retried}: ${error.message}.${advice}`,
				error
			);
		}
		const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
		return new JudgeRequestError(
			'other',
			this.label,
			undefined,
			`request failed: ${message}`,
			error
		);
	}

	private async acquire(signal?: AbortSignal): Promise<void> {
		signal?.throwIfAborted();
		if (this.running < this.concurrency) {
			this.running++;
			return;
		}
		await new Promise<void>((resolve, reject) => {
			const go = () => {
				signal?.removeEventListener('abort', abort);
				resolve();
			};
			const abort = () => {
				const i = this.waiting.indexOf(go);
				if (i >= 0) this.waiting.splice(i, 1);
				reject(signal!.reason);
			};
			signal?.addEventListener('abort', abort, { once: true });
			this.waiting.push(go);
		});
		// release() handed its slot over: `running` is unchanged.
	}

	private release(): void {
		const next = this.waiting.shift();
		if (next) next();
		else this.running--;
	}
}

const judges = new WeakMap<object, Judge>();

/**
 * The Judge for `spec`: itself when it is one, else one Judge per options object (so every
 * call given the same object shares its client, concurrency limit and stats).
 */
export function judgeFor(spec: Judge | JudgeOptions): Judge {
	if (spec instanceof Judge) return spec;
	if (typeof spec !== 'object' || spec === null)
		throw new RulerOptionsError('judge', 'is missing; give {baseURL, model} or {client, model}');
	let judge = judges.get(spec);
	if (!judge) {
		judge = new Judge(spec);
		judges.set(spec, judge);
	}
	return judge;
}
