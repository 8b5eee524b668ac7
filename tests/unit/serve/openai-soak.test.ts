/**
 * A bounded soak of the HTTP server (issue 17) on loopback over the REAL engine on the tiny
 * random Llama: for ~6 s, 8 clients at once send streams they drop after a chunk or two,
 * streams and completions they read to the end, and bad bodies (malformed JSON, text/plain,
 * over the body limit, prototype keys). Afterwards nothing is held (no request slot, no
 * token booked), a valid request is answered, and the heap is back near where it started
 * (after a full GC; 32 MB of slack: the point is "not growing per request", not a number).
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bodyLimitFor } from '../../../src/lib/serve/node/http-body';
import { listenChatServer, type ChatHttpServer } from '../../../src/lib/serve/node/http-server';
import { ChatService } from '../../../src/lib/serve/service';
import { Rng } from '../../../src/lib/util/random';
import { useGpu } from '../../helpers/gpu';
import { CONTEXT, MODEL_NAME, tinyChat, type TinyChat } from './openai-setup';

const SOAK_MS = 6000;
const CLIENTS = 8;
const HEAP_SLACK_BYTES = 32 << 20;
const USER = [{ role: 'user' as const, content: 'hello there' }];

/** A full collection, through V8's gc exposed at run time (vitest runs without --expose-gc). */
function collect(): void {
	setFlagsFromString('--expose-gc');
	(runInNewContext('gc') as () => void)();
}

describe('HTTP server soak', () => {
	const gpu = useGpu();
	let chat: TinyChat;
	let service: ChatService;
	let http: ChatHttpServer;

	beforeAll(async () => {
		chat = await tinyChat(gpu());
		service = new ChatService({
			engine: chat.generator,
			tokenizer: chat.tokenizer,
			model: MODEL_NAME,
			scheduler: { stopTokenIds: chat.config.eosTokenIds },
			admission: { maxRequests: 16, maxTokens: 16 * CONTEXT },
			deadlineMs: 15_000
		});
		http = await listenChatServer(service, { port: 0 });
	});
	afterAll(async () => {
		await http?.close();
		await chat?.release();
	});

	const post = (body: string, init: RequestInit = {}) =>
		fetch(`${http.url}/v1/chat/completions`, {
			method: 'POST',
			headers: { 'content-type': 'application/json' },
			body,
			...init
		});

	it('survives drops and bad bodies under load; nothing held afterwards, heap back near its start', async () => {
		// Warm up outside the deadline (pipelines compiled on the first call), then once
		// through the server (its code paths loaded) before the baseline.
		await chat.generator.generate(
			[chat.tokenizer.encodeChat(USER, { addGenerationPrompt: true })],
			{
				maxTokens: 2
			}
		);
		expect(
			(await post(JSON.stringify({ model: MODEL_NAME, messages: USER, max_tokens: 2 }))).status
		).toBe(200);
		collect();
		const heapBefore = process.memoryUsage().heapUsed;

		const counts: Record<string, number> = {};
		const statuses: Record<string, number> = {};
		const bump = (r: Record<string, number>, k: string) => (r[k] = (r[k] ?? 0) + 1);
		const tooBig = 'x'.repeat(bodyLimitFor(CONTEXT) + 1);
		const end = performance.now() + SOAK_MS;

		async function client(seed: number): Promise<void> {
			const rng = new Rng(seed);
			while (performance.now() < end) {
				const kind = ['drop', 'stream', 'whole', 'bad-json', 'text-plain', 'too-big', 'proto'][
					rng.int(7)
				];
				bump(counts, kind);
				const maxTokens = 2 + rng.int(6);
				const stream = JSON.stringify({
					model: MODEL_NAME,
					messages: USER,
					max_tokens: maxTokens,
					stream: true
				});
				let status = 0;
				try {
					if (kind === 'drop') {
						const abort = new AbortController();
						const res = await post(stream, { signal: abort.signal });
						status = res.status;
						const reader = res.body!.getReader();
						for (let i = 1 + rng.int(2); i > 0; i--) await reader.read();
						abort.abort();
					} else if (kind === 'stream' || kind === 'whole') {
						const body =
							kind === 'stream'
								? stream
								: JSON.stringify({ model: MODEL_NAME, messages: USER, max_tokens: maxTokens });
						const res = await post(body);
						status = res.status;
						const text = await res.text();
						if (status === 200 && kind === 'stream')
							expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
					} else {
						const body =
							kind === 'bad-json'
								? '{"model": '
								: kind === 'too-big'
									? tooBig
									: `{"model": "${MODEL_NAME}", "messages": [], "__proto__": {}}`;
						const res = await post(
							body,
							kind === 'text-plain' ? { headers: { 'content-type': 'text/plain' } } : {}
						);
						status = res.status;
						await res.text();
					}
				} catch (error) {
					if ((error as Error).name !== 'AbortError') throw error;
				}
				bump(statuses, `${kind} ${status}`);
			}
		}
		await Promise.all(Array.from({ length: CLIENTS }, (_, i) => client(i + 1)));
		console.log('soak:', JSON.stringify(statuses));

		// Bad bodies were refused with their status; good ones answered (or 429 under the cap).
		for (const [key, n] of Object.entries(statuses)) {
			const [kind, status] = key.split(' ');
			const want = {
				'bad-json': ['400'],
				'text-plain': ['415'],
				'too-big': ['413'],
				proto: ['400']
			}[kind] ?? ['200', '429'];
			expect(want, `${key} x${n}`).toContain(status);
		}
		expect(counts.drop).toBeGreaterThan(0);

		// Nothing held once the dropped streams' decoding has stopped.
		await expect
			.poll(() => service.admission!.load, { timeout: 10_000 })
			.toEqual({ requests: 0, tokens: 0 });
		const after = await post(JSON.stringify({ model: MODEL_NAME, messages: USER, max_tokens: 2 }));
		expect(after.status).toBe(200);
		expect(((await after.json()) as { object: string }).object).toBe('chat.completion');

		collect();
		const heapAfter = process.memoryUsage().heapUsed;
		console.log(
			`soak heap: ${(heapBefore / 2 ** 20).toFixed(1)} MB -> ${(heapAfter / 2 ** 20).toFixed(1)} MB`
		);
		expect(heapAfter - heapBefore).toBeLessThan(HEAP_SLACK_BYTES);
	});
});
