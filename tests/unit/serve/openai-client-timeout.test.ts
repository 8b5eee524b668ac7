/**
 * The local openai client's timeout (src/lib/serve/client.ts): a request the engine answers
 * after the openai package's default 10 minutes (a long queue on a software GPU) still gets
 * its answer; a timeout the caller sets still applies. Timers are vitest's fake ones, so the
 * 11 minutes pass at once; the handler stands in for the engine (the route is not the point).
 */
import OpenAI from 'openai';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { LOCAL_TIMEOUT_MS, openaiClient, type LocalHandler } from '../../../src/lib/serve/client';

const MODELS = { object: 'list', data: [{ id: 'm', object: 'model', created: 0, owned_by: 'me' }] };
const CHAT = { model: 'm', messages: [{ role: 'user' as const, content: 'hi' }] };

/** A handler that answers when the fake clock has passed `ms`, or fails when aborted (as the
 * engine stops a request whose signal fires). */
const slowHandler =
	(ms: number): LocalHandler =>
	({ signal }) =>
		new Promise((resolve, reject) => {
			const timer = setTimeout(() => resolve({ status: 200, json: MODELS }), ms);
			signal?.addEventListener('abort', () => {
				clearTimeout(timer);
				reject(signal.reason);
			});
		});

afterEach(() => {
	vi.useRealTimers();
});

describe('the local client waits for the engine', () => {
	it('gets an answer that takes longer than the package default of 10 minutes', async () => {
		vi.useFakeTimers();
		const client = openaiClient({ handler: slowHandler(11 * 60_000) });
		expect(client.timeout).toBe(LOCAL_TIMEOUT_MS);
		const answer = client.models.list();
		await vi.advanceTimersByTimeAsync(11 * 60_000 + 1);
		expect((await answer).data.map((m) => m.id)).toEqual(['m']);
	});

	it('hands a whole chat completion over as the object it is; a stream goes as an HTTP body', async () => {
		const seen: Parameters<LocalHandler>[0][] = [];
		const client = openaiClient({
			handler: async (request) => {
				seen.push(request);
				return { status: 200, json: MODELS };
			}
		});
		await client.chat.completions.create(CHAT);
		expect(seen[0]).toMatchObject({ method: 'POST', path: '/v1/chat/completions', json: CHAT });
		expect(seen[0].body).toBeUndefined();
		await client.chat.completions.create({ ...CHAT, stream: true }).catch(() => {});
		expect(seen[1].json).toBeUndefined();
		expect(JSON.parse(seen[1].body!)).toEqual({ ...CHAT, stream: true });
	});

	it('a whole chat completion (answered without HTTP framing) waits as long, and keeps a timeout or signal given', async () => {
		vi.useFakeTimers();
		const slow = openaiClient({ handler: slowHandler(11 * 60_000) });
		const answer = slow.chat.completions.create(CHAT);
		await vi.advanceTimersByTimeAsync(11 * 60_000 + 1);
		expect(((await answer) as unknown as typeof MODELS).data[0].id).toBe('m');
		for (const [client, options] of [
			[openaiClient({ handler: slowHandler(11 * 60_000) }, { timeout: 1000 }), {}],
			[slow, { timeout: 1000 }]
		] as const) {
			const late = client.chat.completions.create(CHAT, options).catch((e: unknown) => e);
			await vi.advanceTimersByTimeAsync(999);
			await vi.advanceTimersByTimeAsync(2);
			expect(await late).toBeInstanceOf(OpenAI.APIConnectionTimeoutError);
		}
		const stop = new AbortController();
		const stopped = slow.chat.completions
			.create(CHAT, { signal: stop.signal })
			.catch((e: unknown) => e);
		stop.abort();
		expect(await stopped).toBeInstanceOf(OpenAI.APIUserAbortError);
	});

	it("keeps the caller's own timeout", async () => {
		vi.useFakeTimers();
		const client = openaiClient({ handler: slowHandler(11 * 60_000) }, { timeout: 1000 });
		let settled = 'pending';
		void client.models.list().then(
			() => (settled = 'answered'),
			() => (settled = 'failed')
		);
		await vi.advanceTimersByTimeAsync(999);
		expect(settled).toBe('pending');
		await vi.advanceTimersByTimeAsync(2);
		expect(settled).toBe('failed');
	});
});
