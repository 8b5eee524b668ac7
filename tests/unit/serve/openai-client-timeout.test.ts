/**
 * The local openai client's timeout (src/lib/serve/client.ts): a request the engine answers
 * after the openai package's default 10 minutes (a long queue on a software GPU) still gets
 * its answer; a timeout the caller sets still applies. Timers are vitest's fake ones, so the
 * 11 minutes pass at once; the handler stands in for the engine (the route is not the point).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { LOCAL_TIMEOUT_MS, openaiClient, type LocalHandler } from '../../../src/lib/serve/client';

const MODELS = { object: 'list', data: [{ id: 'm', object: 'model', created: 0, owned_by: 'me' }] };

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
