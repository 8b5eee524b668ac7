/**
 * BatchScheduler's aborts over the REAL engine on the tiny random Llama (openai-setup.ts):
 * requests gathered into one engine call stop one by one, and the call itself (its signal,
 * which the Generator checks between prefill layers and decode steps) is aborted only once
 * every request in it has aborted: a request still waiting keeps the call going.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatEngine, EngineOptions } from '../../../src/lib/serve/engine';
import { BatchScheduler, type GenerationJob } from '../../../src/lib/serve/scheduler';
import { useGpu } from '../../helpers/gpu';
import { tinyChat, type TinyChat } from './openai-setup';

const MAX_TOKENS = 40;

describe('BatchScheduler aborts', () => {
	const gpu = useGpu();
	let chat: TinyChat;
	/** Each engine call: its options (the call's signal among them), steps, whether it threw. */
	const calls: { options: EngineOptions; steps: number; threw: boolean }[] = [];
	let scheduler: BatchScheduler;

	beforeAll(async () => {
		chat = await tinyChat(gpu());
		const engine: ChatEngine = {
			generate: async (prompts, options) => {
				const call = { options, steps: 0, threw: true };
				calls.push(call);
				const r = await chat.generator.generate(prompts, {
					...options,
					onStep: (tokens) => (call.steps++, options.onStep?.(tokens))
				});
				call.threw = false;
				return r;
			}
		};
		scheduler = new BatchScheduler(engine, { stopTokenIds: [] });
	});
	afterAll(() => chat?.release());

	/** A job that aborts itself at its `at`-th token (never: Infinity). */
	function job(at: number, seed: number): { job: GenerationJob; tokens: number[] } {
		const controller = new AbortController();
		const tokens: number[] = [];
		const prompt = chat.tokenizer.encode('hello there');
		return {
			tokens,
			job: {
				prompts: [prompt],
				params: { temperature: 1, topP: 1, topK: 0, seed, maxTokens: MAX_TOKENS },
				signal: controller.signal,
				onToken: (_, id) => {
					tokens.push(id);
					if (tokens.length === at) controller.abort();
				}
			}
		};
	}

	it('one request of a shared call aborted: it rejects, the other gets all its tokens', async () => {
		const a = job(2, 1);
		const b = job(Infinity, 2);
		const [ra, rb] = await Promise.allSettled([scheduler.submit(a.job), scheduler.submit(b.job)]);
		expect(calls).toHaveLength(1); // gathered into one call
		expect(ra.status).toBe('rejected');
		expect((ra as PromiseRejectedResult).reason).toMatchObject({ name: 'AbortError' });
		expect(a.tokens).toHaveLength(2);
		expect(rb.status).toBe('fulfilled');
		expect(b.tokens).toHaveLength(MAX_TOKENS);
		expect((rb as PromiseFulfilledResult<{ ids: number[] }[]>).value[0].ids).toEqual(b.tokens);
		expect(calls[0].threw).toBe(false);
		expect(calls[0].options.signal?.aborted).toBe(false);
	});

	it('every request of a call aborted: the call is aborted too, and stops at once', async () => {
		const a = job(2, 3);
		const b = job(3, 4);
		const results = await Promise.allSettled([scheduler.submit(a.job), scheduler.submit(b.job)]);
		const call = calls.at(-1)!;
		expect(calls).toHaveLength(2);
		expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
		expect(call.options.signal?.aborted).toBe(true);
		expect(call.threw).toBe(true);
		// b aborted in step 3's onToken: the engine's next check (before step 4's tokens) threw
		expect(call.steps).toBe(3);
	});
});
