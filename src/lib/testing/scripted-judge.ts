/**
 * @file A scripted OpenAI-compatible judge on loopback HTTP for RULER tests: each POST
 * /v1/chat/completions is recorded (`seen`) and answered by the test's `Behaviour` (scores
 * by rule, or bad JSON, wrong ids, 429 / 500, a hang), reached through the real `openai`
 * client. GET /v1/models lists one model. `{ cors: true }` answers browsers' preflights,
 * as a judge that allows them (the e2e test).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ChatCompletion } from 'openai/resources/chat/completions';

export interface ChatMessage {
	role: string;
	content: string;
}
export interface Seen {
	body: { model: string; messages: ChatMessage[]; [k: string]: unknown };
	authorization?: string;
	at: number;
}
export type Answer =
	{ status: number; json?: unknown; headers?: Record<string, string> } | { hang: true };
/** Decides the answer to the n-th request (0-based) of a test. */
export type Behaviour = (seen: Seen, n: number) => Answer;

/** The trajectories of a judge request: id -> the JSON text sent for it. */
export function trajectoriesOf(seen: Seen): Map<string, string> {
	const user = seen.body.messages[1].content;
	const out = new Map<string, string>();
	for (const m of user.matchAll(/<trajectory id="(\d+)">\n(.*?)\n<\/trajectory>/gs))
		out.set(m[1], m[2]);
	return out;
}

/** A chat completion whose message is `content` (with usage, by default, and a cost). */
export function completion(
	content: string | null,
	usage = true,
	extra: object = {}
): ChatCompletion {
	return {
		id: 'chatcmpl-judge',
		object: 'chat.completion',
		created: 0,
		model: 'scripted-judge',
		choices: [
			{
				index: 0,
				finish_reason: 'stop',
				logprobs: null,
				message: { role: 'assistant', content, refusal: null }
			}
		],
		...(usage
			? {
					usage: {
						prompt_tokens: 100,
						completion_tokens: 20,
						total_tokens: 120,
						cost: 0.0015
					} as ChatCompletion['usage']
				}
			: {}),
		...extra
	};
}

/** 200 with `content` as the judge's message. */
export const ok = (content: string | null): Answer => ({ status: 200, json: completion(content) });

export interface ScriptedJudgeOptions {
	/** Answer CORS preflights and allow any origin (a judge a browser may call). */
	cors?: boolean;
}

/** The server; `url` (…/v1) once started; `reset(b)` sets the next test's behaviour. */
export class ScriptedJudge {
	server!: Server;
	url!: string;
	seen: Seen[] = [];
	/** GET /v1/models requests (their Authorization header). */
	modelRequests: { authorization?: string }[] = [];
	/** CORS preflights answered (OPTIONS), with their Origin. */
	preflights: { origin?: string; headers?: string }[] = [];
	/** The answer to GET /v1/models instead of the listing (e.g. a 401), until reset. */
	modelsAnswer: Extract<Answer, { status: number }> | null = null;
	behaviour: Behaviour;
	private readonly cors: boolean;
	/** The behaviour `reset()` returns to. */
	constructor(
		private readonly initial: Behaviour,
		options: ScriptedJudgeOptions = {}
	) {
		this.behaviour = initial;
		this.cors = !!options.cors;
	}
	inFlight = 0;
	peakInFlight = 0;
	/** ms each answer waits before it is sent. */
	delayMs = 0;
	private hanging: ServerResponse[] = [];

	/** Listens on loopback, on `port` (0: any free one). */
	async start(port = 0): Promise<void> {
		this.server = createServer((req, res) => void this.handle(req, res));
		await new Promise<void>((r) => this.server.listen(port, '127.0.0.1', r));
		this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
	}

	reset(behaviour: Behaviour = this.initial): void {
		this.seen = [];
		this.modelRequests = [];
		this.preflights = [];
		this.modelsAnswer = null;
		this.behaviour = behaviour;
		this.delayMs = 0;
		this.peakInFlight = 0;
		for (const res of this.hanging.splice(0)) res.destroy();
	}

	async stop(): Promise<void> {
		this.reset();
		this.server.closeAllConnections();
		await new Promise((r) => this.server.close(r));
	}

	/** The CORS headers of an answer to `req` (none without `cors`). */
	private corsHeaders(req: IncomingMessage): Record<string, string> {
		if (!this.cors) return {};
		return { 'access-control-allow-origin': req.headers.origin ?? '*', vary: 'Origin' };
	}

	private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
		let text = '';
		for await (const chunk of req) text += chunk;
		const cors = this.corsHeaders(req);
		if (this.cors && req.method === 'OPTIONS') {
			// the preflight of a request with an Authorization header and the client's own headers
			const asked = req.headers['access-control-request-headers'];
			this.preflights.push({ origin: req.headers.origin, headers: asked });
			res
				.writeHead(204, {
					...cors,
					'access-control-allow-methods': 'GET, POST, OPTIONS',
					'access-control-allow-headers': asked ?? 'authorization, content-type',
					'access-control-max-age': '600'
				})
				.end();
			return;
		}
		if (req.method === 'GET' && req.url === '/v1/models') {
			this.modelRequests.push({ authorization: req.headers.authorization });
			const answer = this.modelsAnswer ?? {
				status: 200,
				json: {
					object: 'list',
					data: [{ id: 'scripted-judge', object: 'model', created: 0, owned_by: 'tests' }]
				}
			};
			res
				.writeHead(answer.status, {
					'content-type': 'application/json',
					...cors,
					...answer.headers
				})
				.end(JSON.stringify(answer.json ?? {}));
			return;
		}
		if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
			res.writeHead(404, cors).end();
			return;
		}
		const seen: Seen = {
			body: JSON.parse(text) as Seen['body'],
			authorization: req.headers.authorization,
			at: performance.now()
		};
		const n = this.seen.push(seen) - 1;
		this.inFlight++;
		this.peakInFlight = Math.max(this.peakInFlight, this.inFlight);
		try {
			const answer = this.behaviour(seen, n);
			if ('hang' in answer) {
				this.hanging.push(res);
				res.on('close', () => this.inFlight--);
				return;
			}
			if (this.delayMs) await new Promise((r) => setTimeout(r, this.delayMs));
			res.writeHead(answer.status, {
				'content-type': 'application/json',
				...cors,
				...answer.headers
			});
			res.end(JSON.stringify(answer.json ?? {}));
			this.inFlight--;
		} catch (error) {
			this.inFlight--;
			res.writeHead(599, cors).end(String(error));
		}
	}
}
