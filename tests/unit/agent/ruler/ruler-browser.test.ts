/**
 * RULER's judge as the page's worker uses it, on a scripted judge over loopback:
 * `browserOrigin` in a page, a worker and Node; a failed connection in a browser also names
 * CORS, the page's origin and each judge's setting; `check()` passes on a listing (key as
 * bearer) or a 404, fails on 401 and fast on nothing listening; the scripted judge's CORS.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { JudgeRequestError } from '../../../../src/lib/agent/ruler/errors';
import { Judge } from '../../../../src/lib/agent/ruler/judge';
import { browserOrigin, corsAdvice } from '../../../../src/lib/agent/ruler/judge-cors';
import { ok, ScriptedJudge } from '../../../../src/lib/testing/scripted-judge';
import { failure } from '../../../helpers/failure';

const ORIGIN = 'http://127.0.0.1:4173';
const NOTHING = 'http://127.0.0.1:9/v1'; // the discard port: nothing listens there

/** As the worker's global scope looks to judge.ts: a document (page) and a location. */
function inBrowser(): void {
	vi.stubGlobal('document', {});
	vi.stubGlobal('location', { origin: ORIGIN });
}

afterEach(() => {
	vi.unstubAllGlobals();
});

describe("the judge's browser side", () => {
	const judge = new ScriptedJudge(() => ok('{"scores": []}'), { cors: true });
	const plain = new ScriptedJudge(() => ok('{"scores": []}'));
	beforeAll(async () => {
		await judge.start();
		await plain.start();
	});
	afterAll(async () => {
		await judge.stop();
		await plain.stop();
	});

	it('browserOrigin: a page or a worker and its origin; null in Node', () => {
		expect(browserOrigin()).toBeNull();
		expect(browserOrigin({ document: {}, location: { origin: ORIGIN } })).toBe(ORIGIN);
		expect(browserOrigin({ WorkerGlobalScope: function () {}, location: { origin: ORIGIN } })).toBe(
			ORIGIN
		);
		expect(browserOrigin({ document: {} })).toBe('this page');
		expect(browserOrigin({ document: {}, location: { origin: 'null' } })).toBe('this page');
		expect(browserOrigin({ navigator: {}, location: { origin: ORIGIN } })).toBeNull();
	});

	it('corsAdvice names the origin and what each judge needs', () => {
		const text = corsAdvice(ORIGIN);
		expect(text).toMatch(/cross-origin requests \(CORS\)/);
		expect(text).toContain(`OLLAMA_ORIGINS=${ORIGIN}`);
		expect(text).toContain(`--allowed-origins '["${ORIGIN}"]'`);
		expect(text).toMatch(/LM Studio: turn on "Enable CORS"/);
		expect(text).toMatch(/proxy/);
		expect(text).toMatch(/OpenAI and OpenRouter accept requests from browsers/);
	});

	it('a failed connection: in Node as before, in a browser also the CORS advice', async () => {
		const options = { baseURL: NOTHING, model: 'm', maxRetries: 0 };
		const node = await failure(
			new Judge(options).complete([{ role: 'user', content: 'hi' }]),
			JudgeRequestError
		);
		expect(node).toMatchObject({ kind: 'ruler-judge-request', reason: 'connection' });
		expect(node.message).toMatch(/could not be reached \(1 attempt\)/);
		expect(node.message).not.toMatch(/CORS/);

		inBrowser();
		const judgeInTab = new Judge(options); // (made with dangerouslyAllowBrowser: no refusal)
		const tab = await failure(
			judgeInTab.complete([{ role: 'user', content: 'hi' }]),
			JudgeRequestError
		);
		expect(tab).toMatchObject({ kind: 'ruler-judge-request', reason: 'connection' });
		expect(tab.message).toMatch(/could not be reached .*Check the base URL/);
		expect(tab.message).toContain(corsAdvice(ORIGIN));
		expect(tab.message).toContain(`judge 'm' at ${NOTHING}`);
	});

	it('check(): lists the models with the key as the bearer token; a 404 listing passes', async () => {
		judge.reset();
		await new Judge({ baseURL: judge.url, model: 'm', apiKey: 'sk-check' }).check();
		expect(judge.modelRequests).toEqual([{ authorization: 'Bearer sk-check' }]);
		expect(judge.seen).toHaveLength(0); // no judging request, no tokens
		// an endpoint with no listing (404 for /models) is not refused: judging will tell
		await new Judge({ baseURL: `${judge.url}/elsewhere`, model: 'm' }).check();
	});

	it('check(): a 401 fails with the key advice (the typed-in key, in a browser)', async () => {
		judge.reset();
		judge.modelsAnswer = { status: 401, json: { error: { message: 'bad key' } } };
		const node = await failure(
			new Judge({ baseURL: judge.url, model: 'm' }).check(),
			JudgeRequestError
		);
		expect(node).toMatchObject({ reason: 'http', status: 401 });
		expect(node.message).toMatch(
			/answered HTTP 401: 401 bad key\. Check the API key \(its environment/
		);
		inBrowser();
		const tab = await failure(
			new Judge({ baseURL: judge.url, model: 'm' }).check(),
			JudgeRequestError
		);
		expect(tab.message).toMatch(/Check the API key \(the one typed in for the judge\)/);
	});

	it('check(): nothing listening fails fast, as a connection error (CORS in a browser)', async () => {
		inBrowser();
		const t0 = performance.now();
		const error = await failure(
			new Judge({ baseURL: NOTHING, model: 'm' }).check(),
			JudgeRequestError
		);
		expect(performance.now() - t0).toBeLessThan(10_000); // one retry after <= 1 s backoff
		expect(error).toMatchObject({ reason: 'connection' });
		expect(error.message).toMatch(/could not be reached \(2 attempts\)/);
		expect(error.message).toMatch(/CORS/);
		expect(error.message).toContain(ORIGIN);
	});

	it('the scripted judge with cors answers preflights; without it, no CORS header', async () => {
		judge.reset();
		const preflight = await fetch(`${judge.url}/chat/completions`, {
			method: 'OPTIONS',
			headers: {
				origin: ORIGIN,
				'access-control-request-method': 'POST',
				'access-control-request-headers': 'authorization,content-type,x-stainless-os'
			}
		});
		expect(preflight.status).toBe(204);
		expect(preflight.headers.get('access-control-allow-origin')).toBe(ORIGIN);
		expect(preflight.headers.get('access-control-allow-headers')).toBe(
			'authorization,content-type,x-stainless-os'
		);
		expect(preflight.headers.get('access-control-allow-methods')).toMatch(/POST/);
		expect(judge.preflights).toEqual([
			{ origin: ORIGIN, headers: 'authorization,content-type,x-stainless-os' }
		]);
		const listing = await fetch(`${judge.url}/models`, { headers: { origin: ORIGIN } });
		expect(listing.headers.get('access-control-allow-origin')).toBe(ORIGIN);
		const none = await fetch(`${plain.url}/models`, { headers: { origin: ORIGIN } });
		expect(none.status).toBe(200);
		expect(none.headers.get('access-control-allow-origin')).toBeNull();
	});
});
