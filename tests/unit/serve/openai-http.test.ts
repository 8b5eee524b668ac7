/**
 * The OpenAI-compatible HTTP server (http-server.ts) on loopback, driven by the official
 * `openai` client and by plain fetch, over the REAL engine on a tiny random Llama
 * (openai-setup.ts); and `cli serve` as a child process. Few tokens per request.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatEngine } from '../../../src/lib/serve/engine';
import { listenChatServer, type ChatHttpServer } from '../../../src/lib/serve/node/http-server';
import type {
	TabrlChatCompletion,
	TabrlChatCompletionChunk
} from '../../../src/lib/serve/response';
import { ChatService } from '../../../src/lib/serve/service';
import { useGpu } from '../../helpers/gpu';
import { MODEL_NAME, tinyChat, type TinyChat } from './openai-setup';

const ROOT = join(import.meta.dirname, '../../..');
const USER = [{ role: 'user' as const, content: 'hello there' }];

describe('OpenAI-compatible HTTP server on the real engine', () => {
	const gpu = useGpu();
	let chat: TinyChat;
	let http: ChatHttpServer;
	let client: OpenAI;
	/** Decode steps of the engine call in flight; of each ended call, its steps and whether it
	 * returned or threw (the real engine, observed, for the abort test). */
	let steps = 0;
	const ended: { steps: number; threw: boolean }[] = [];

	beforeAll(async () => {
		chat = await tinyChat(gpu());
		const observed: ChatEngine = {
			contextLength: chat.generator.contextLength,
			generate: async (prompts, options) => {
				steps = 0;
				let threw = true;
				try {
					const r = await chat.generator.generate(prompts, {
						...options,
						onStep: (tokens) => {
							steps++;
							return options.onStep?.(tokens);
						}
					});
					threw = false;
					return r;
				} finally {
					ended.push({ steps, threw });
				}
			}
		};
		const service = new ChatService({
			engine: observed,
			tokenizer: chat.tokenizer,
			model: MODEL_NAME,
			scheduler: { stopTokenIds: chat.config.eosTokenIds }
		});
		http = await listenChatServer(service, { port: 0 });
		client = new OpenAI({ baseURL: `${http.url}/v1`, apiKey: 'unused', maxRetries: 0 });
	});
	afterAll(async () => {
		await http?.close();
		await chat?.release();
	});

	it('listens on loopback and lists the model', async () => {
		expect(http.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
		const list = await client.models.list();
		expect(list.data).toEqual([
			{ id: MODEL_NAME, object: 'model', created: expect.any(Number), owned_by: 'tabrl' }
		]);
	});

	it('answers a completion, and streams the same answer for the same seed', async () => {
		const body = { model: MODEL_NAME, messages: USER, max_tokens: 4, temperature: 1, seed: 5 };
		const whole = (await client.chat.completions.create(body)) as unknown as TabrlChatCompletion;
		expect(whole.object).toBe('chat.completion');
		expect(whole.choices[0].tabrl.ids.length).toBeGreaterThan(0);
		let content = '';
		let finish: string | null = null;
		const stream = await client.chat.completions.create({ ...body, stream: true });
		for await (const chunk of stream) {
			content += chunk.choices[0]?.delta.content ?? '';
			finish = chunk.choices[0]?.finish_reason ?? finish;
		}
		expect(content).toBe(whole.choices[0].message.content);
		expect(finish).toBe(whole.choices[0].finish_reason);
	});

	it("vLLM's return_token_ids and return_tokens_as_token_ids give the exact tokens; a server for other clients sends no tabrl record", async () => {
		const body = {
			model: MODEL_NAME,
			messages: USER,
			max_tokens: 3,
			temperature: 1,
			seed: 9,
			logprobs: true,
			return_token_ids: true,
			return_tokens_as_token_ids: true
		};
		const r = (await client.chat.completions.create(
			body as never
		)) as unknown as TabrlChatCompletion;
		const c = r.choices[0];
		expect(r.prompt_token_ids).toEqual(c.tabrl.prompt_ids);
		expect(c.token_ids).toEqual(c.tabrl.ids);
		expect(c.logprobs!.content!.map((e) => e.token)).toEqual(
			c.tabrl.ids.map((id) => `token_id:${id}`)
		);
		expect(c.logprobs!.content!.map((e) => e.logprob)).toEqual(c.tabrl.logprobs);
		// streamed: each choice's last chunk carries its ids, and the prompt's
		const stream = await client.chat.completions.create({ ...body, stream: true } as never);
		let last: TabrlChatCompletionChunk | undefined;
		for await (const chunk of stream as unknown as AsyncIterable<TabrlChatCompletionChunk>)
			if (chunk.choices[0]?.finish_reason) last = chunk;
		expect(last?.prompt_token_ids).toEqual(c.tabrl.prompt_ids);
		expect(last?.choices[0].token_ids).toEqual(c.tabrl.ids);
		// `cli serve`'s service (tokenRecords off): standard answers, ids only when asked
		const plain = new ChatService({
			engine: chat.generator,
			tokenizer: chat.tokenizer,
			model: MODEL_NAME,
			scheduler: { stopTokenIds: chat.config.eosTokenIds },
			tokenRecords: false
		});
		const served = await listenChatServer(plain, { port: 0 });
		try {
			const other = new OpenAI({ baseURL: `${served.url}/v1`, apiKey: 'unused', maxRetries: 0 });
			const a = (await other.chat.completions.create({
				model: MODEL_NAME,
				messages: USER,
				max_tokens: 2
			})) as unknown as Record<string, unknown> & { choices: Record<string, unknown>[] };
			expect(a.choices[0]).not.toHaveProperty('tabrl');
			expect(a).not.toHaveProperty('prompt_token_ids');
			expect(a.choices[0]).not.toHaveProperty('token_ids');
			const b = (await other.chat.completions.create({
				...body,
				stream: false
			} as never)) as unknown as TabrlChatCompletion;
			expect(b.choices[0]).not.toHaveProperty('tabrl');
			expect(b.prompt_token_ids).toEqual(c.tabrl.prompt_ids);
			expect(b.choices[0].token_ids).toEqual(c.tabrl.ids); // (same seed, same tokens)
		} finally {
			await served.close();
		}
	});

	it('top_logprobs up to 20: the most likely tokens per position, the sampled one among them as itself', async () => {
		const body = {
			model: MODEL_NAME,
			messages: USER,
			max_tokens: 2,
			temperature: 0,
			logprobs: true,
			top_logprobs: 20
		};
		const r = (await client.chat.completions.create(body)) as unknown as TabrlChatCompletion;
		const entries = r.choices[0].logprobs!.content!;
		expect(entries).toHaveLength(r.choices[0].tabrl.ids.length);
		for (const e of entries) {
			expect(e.top_logprobs).toHaveLength(20);
			for (const t of e.top_logprobs)
				expect(Object.keys(t).sort()).toEqual(['bytes', 'logprob', 'token']);
			const values = e.top_logprobs.map((t) => t.logprob);
			expect(values).toEqual([...values].sort((a, b) => b - a));
			// greedy: the sampled token is the most likely one, its logprob the same within f32
			expect(e.top_logprobs[0].token).toBe(e.token);
			expect(Math.abs(e.top_logprobs[0].logprob - e.logprob)).toBeLessThan(1e-5);
		}
		// 3 asked: 3 given (a call may compute more for a neighbour that asked for more)
		const three = await client.chat.completions.create({ ...body, top_logprobs: 3, max_tokens: 1 });
		expect(three.choices[0].logprobs!.content![0].top_logprobs).toHaveLength(3);
		await expect(client.chat.completions.create({ ...body, top_logprobs: 21 })).rejects.toThrow(
			/top_logprobs is between 0 and 20/
		);
	});

	it('sends server-sent events ending with data: [DONE]', async () => {
		const res = await fetch(`${http.url}/v1/chat/completions`, {
			method: 'POST',
			headers: { 'content-type': 'application/json' },
			body: JSON.stringify({ model: MODEL_NAME, messages: USER, max_tokens: 2, stream: true })
		});
		expect(res.status).toBe(200);
		expect(res.headers.get('content-type')).toBe('text/event-stream');
		const frames = (await res.text()).split('\n\n').filter((f) => f !== '');
		for (const f of frames) expect(f.startsWith('data: ')).toBe(true);
		expect(frames.at(-1)).toBe('data: [DONE]');
		const chunks = frames.slice(0, -1).map((f) => JSON.parse(f.slice(6)));
		expect(chunks[0].choices[0].delta).toEqual({ role: 'assistant', content: '' });
		expect(chunks.at(-1).choices[0].finish_reason).toMatch(/^(stop|length)$/);
	});

	it('raises BadRequestError and NotFoundError through the client', async () => {
		const bad = await client.chat.completions
			.create({ model: MODEL_NAME, messages: USER, n: 0 })
			.catch((e: unknown) => e);
		expect(bad).toBeInstanceOf(OpenAI.BadRequestError);
		expect((bad as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('n');
		const missing = await client.chat.completions
			.create({ model: 'nope', messages: USER })
			.catch((e: unknown) => e);
		expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
	});

	it('answers bad JSON 400, unknown routes 404, wrong methods 405, with OpenAI error bodies', async () => {
		const send = async (method: string, path: string, body?: string) => {
			const headers = body === undefined ? undefined : { 'content-type': 'application/json' };
			const res = await fetch(`${http.url}${path}`, { method, body, headers });
			return { status: res.status, json: (await res.json()) as { error: Record<string, unknown> } };
		};
		const shape = {
			message: expect.any(String),
			type: 'invalid_request_error',
			param: null,
			code: expect.any(String)
		};
		for (const [method, path, body, status, code] of [
			['POST', '/v1/chat/completions', '{"model": ', 400, 'invalid_json'],
			['POST', '/v1/chat/completions', '', 400, 'invalid_json'],
			['GET', '/v1/nothing', undefined, 404, 'unknown_url'],
			['POST', '/v2/chat/completions', '{}', 404, 'unknown_url'],
			['GET', '/v1/chat/completions', undefined, 405, 'method_not_allowed'],
			['POST', '/v1/models', '{}', 405, 'method_not_allowed']
		] as const) {
			const r = await send(method, path, body);
			expect(r.status, `${method} ${path}`).toBe(status);
			expect(r.json.error).toEqual({ ...shape, code });
		}
		const model = await send('GET', '/v1/models/other');
		expect(model.status).toBe(404);
		expect(model.json.error.code).toBe('model_not_found');
	});

	it('stops decoding a stream whose client went away', async () => {
		const controller = new AbortController();
		const stream = await client.chat.completions.create(
			{ model: MODEL_NAME, messages: USER, max_tokens: 400, stream: true },
			{ signal: controller.signal }
		);
		let chunks = 0;
		let stepsAtAbort = 0;
		const endedBefore = ended.length;
		for await (const chunk of stream) {
			void chunk;
			if (++chunks === 3) {
				stepsAtAbort = steps;
				controller.abort();
				break;
			}
		}
		// The engine call ends soon after the server sees the client go away. Waited for here
		// with a deadline, so a server that keeps decoding fails with where it was, not with
		// the test's timeout.
		const deadline = Date.now() + 60_000;
		while (ended.length === endedBefore && Date.now() < deadline)
			await new Promise((r) => setTimeout(r, 50));
		expect(
			ended.length,
			`engine still decoding at step ${steps}, 60 s after the client left at step ${stepsAtAbort}`
		).toBeGreaterThan(endedBefore);
		// The server is still answering.
		const after = await client.chat.completions.create({
			model: MODEL_NAME,
			messages: USER,
			max_tokens: 1
		});
		expect(after.choices).toHaveLength(1);
		// The aborted call stopped soon after the abort, not at 400: its only request gone, the
		// call's own signal ends it (it throws), unless it ended by itself first (an end token).
		// The client reads behind the server (which does not wait for it: 225 tokens decoded by
		// the third chunk, once, under CI's load), so "soon" counts the steps after the abort.
		const aborted = ended[endedBefore];
		console.log(
			`abort: after step ${stepsAtAbort}, stopped at ${aborted.steps} (${aborted.threw ? 'aborted' : 'ended'})`
		);
		expect(aborted.steps).toBeLessThan(400);
		expect(aborted.steps - stepsAtAbort).toBeLessThan(32);
	});

	it('`cli serve` prints one JSON line when listening, serves, and exits 0 on SIGTERM', async () => {
		const child = spawn(
			join(ROOT, 'node_modules/.bin/tsx'),
			[join(ROOT, 'scripts/cli.ts'), 'serve', '--model', chat.dir, '--port', '0', '--name', 'tiny'],
			{ cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] }
		);
		let stderr = '';
		child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
		const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
		const lines = createInterface({ input: child.stdout });
		const received: string[] = [];
		const first = await new Promise<string>((resolve, reject) => {
			lines.on('line', (l) => {
				received.push(l);
				if (received.length === 1) resolve(l);
			});
			void exited.then((code) => reject(new Error(`serve exited ${code}: ${stderr}`)));
		});
		const { listening, model } = JSON.parse(first) as { listening: string; model: string };
		expect(listening).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
		expect(model).toBe('tiny');
		const remote = new OpenAI({ baseURL: `${listening}/v1`, apiKey: 'unused', maxRetries: 0 });
		expect((await remote.models.list()).data.map((m) => m.id)).toEqual(['tiny']);
		const r = await remote.chat.completions.create({
			model: 'tiny',
			messages: USER,
			max_tokens: 2
		});
		expect(r.choices[0].message.role).toBe('assistant');
		child.kill('SIGTERM');
		expect(await exited).toBe(0);
		expect(received).toHaveLength(1);
		// Nothing on stderr but the GPU stack's own complaint where XDG_RUNTIME_DIR is unset.
		expect(stderr.replace(/^error: XDG_RUNTIME_DIR is invalid or not set.*\n/gm, '')).toBe('');
	});
});
