/**
 * A bounded soak of the HTTP server over the REAL engine: for SOAK_MS, 32 clients
 * (serve-load.ts) while a prober times GET /v1/models and /health. Afterwards nothing is
 * held, a request is answered, the heap is back near its start, and the probes are answered
 * while requests are decoding (a route waiting behind decoding fails CI). Probe latency is
 * printed, not asserted: SwiftShader compiles kernels on the event loop, so times here are
 * noise (the GPU figures are in BENCHMARKS.md, from tools/bench/serve-soak.ts).
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bodyLimitFor } from '../../../src/lib/serve/node/http-body';
import { listenChatServer, type ChatHttpServer } from '../../../src/lib/serve/node/http-server';
import { ChatService } from '../../../src/lib/serve/service';
import {
	probeLatency,
	quantile,
	runLoad,
	unexpectedStatuses
} from '../../../tools/bench/serve-load';
import { useGpu } from '../../helpers/gpu';
import { CONTEXT, MODEL_NAME, tinyChat, type TinyChat } from './openai-setup';

const WARMUP_MS = 8000;
const SOAK_MS = 6000;
const CLIENTS = 32;
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

		// One round of the same load first: SwiftShader compiles each kernel variant the mix
		// needs synchronously (seconds each, on the event loop), which is not what is measured.
		const load = (until: number) =>
			runLoad({
				url: http.url,
				model: MODEL_NAME,
				clients: CLIENTS,
				until,
				tooBigBytes: bodyLimitFor(CONTEXT) + 1
			});
		await load(performance.now() + WARMUP_MS);
		await expect
			.poll(() => service.admission!.load, { timeout: 10_000 })
			.toEqual({ requests: 0, tokens: 0 });
		const until = performance.now() + SOAK_MS;
		const [report, probes] = await Promise.all([
			load(until),
			probeLatency(http.url, ['/v1/models', '/health'], until, {
				busy: () => service.admission!.load.requests > 0
			})
		]);
		console.log('soak:', JSON.stringify(report.statuses));

		// Bad bodies were refused with their status; good ones answered (or 429 under the cap).
		expect(unexpectedStatuses(report)).toEqual([]);
		expect(report.unfinishedStreams).toBe(0);
		expect(report.counts.drop).toBeGreaterThan(0);
		expect(probes.failures).toEqual([]);
		for (const [path, ms] of Object.entries(probes.ms)) {
			const p99 = quantile(ms, 0.99);
			console.log(
				`soak probe ${path}: ${ms.length} probes, p50 ${quantile(ms, 0.5).toFixed(1)} ms, p99 ${p99.toFixed(1)} ms`
			);
			// (probes run one after another, and a kernel compiled on the event loop stalls them
			// for seconds: a loaded 2-core machine got 4 a path in 6 s; a route that waited for
			// decoding to drain would get none in while 32 clients keep it busy)
			expect(ms.length).toBeGreaterThanOrEqual(2);
		}
		// Under 32 clients the server is never idle for long: probes that waited for decoding
		// to drain would arrive when nothing is in flight, and most would not count here.
		const answered = Object.values(probes.ms).reduce((n, ms) => n + ms.length, 0);
		console.log(`soak probes answered mid-decode: ${probes.answeredBusy} of ${answered}`);
		expect(probes.answeredBusy).toBeGreaterThanOrEqual(answered / 2);

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
