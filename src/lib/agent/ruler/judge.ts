/**
 * @file The judge RULER asks: any OpenAI-compatible chat completions endpoint through the
 * official `openai` client, or an OpenAI-like client already made. Retries and timeouts are
 * the client's own (408/409/429/5xx, connection and timeouts, with backoff); `concurrency`
 * caps requests in flight across every call sharing one Judge (one per options object:
 * judgeFor); `stats` adds up requests, latency, tokens and cost. The API key goes only into
 * the Authorization header. `check()` lists the endpoint's models (no tokens) before a run.
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
import { exactResponseFormat, RESPONSE_FORMAT } from './schema';
import { browserOrigin, corsAdvice } from './judge-cors';
import type {
	JudgeAnswer,
	JudgeClient,
	JudgeCommon,
	JudgeOptions,
	JudgeRequestOptions,
	JudgeStats
} from './judge-options';

const PLACEHOLDER_KEY = 'no-key';
/** `check()`'s wait for an answer, per attempt: a model listing is quick when there is one. */
const CHECK_TIMEOUT_MS = 30_000;
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
