/**
 * @file A scripted OpenAI-compatible judge on loopback HTTP for tests of RULER (node:http):
 * each request to POST /v1/chat/completions is recorded (`seen`) and answered by a
 * `Behaviour` the test sets: by rule (scores it computes from the trajectories sent) or
 * misbehaving on purpose (bad JSON, wrong ids, 429 / 500, a hang). Callers reach it through
 * the official `openai` client, exactly as a remote judge, so nothing of fetch or the
 * client is mocked.
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

/** The server; `url` (…/v1) once started; `reset(b)` sets the next test's behaviour. */
export class ScriptedJudge {
	server!: Server;
	url!: string;
	seen: Seen[] = [];
	behaviour: Behaviour;
	/** The behaviour `reset()` returns to. */
	constructor(private readonly initial: Behaviour) {
		this.behaviour = initial;
	}
	inFlight = 0;
	peakInFlight = 0;
	/** ms each answer waits before it is sent. */
	delayMs = 0;
	private hanging: ServerResponse[] = [];

	async start(): Promise<void> {
		this.server = createServer((req, res) => void this.handle(req, res));
		await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
		this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
	}

	reset(behaviour: Behaviour = this.initial): void {
		this.seen = [];
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

	private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
		let text = '';
		for await (const chunk of req) text += chunk;
		if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
			res.writeHead(404).end();
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
			res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
			res.end(JSON.stringify(answer.json ?? {}));
			this.inFlight--;
		} catch (error) {
			this.inFlight--;
			res.writeHead(599).end(String(error));
		}
	}
}
