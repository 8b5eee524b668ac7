/**
 * @file In a browser the judge is called from the tab's worker, across origins: a judge
 * that does not answer CORS preflights fails exactly as one that is down ("Failed to
 * fetch"), so a connection error there names both, with what to do for each common judge.
 */

/**
 * The origin of the page or worker this code runs in (e.g. 'https://tabrl.example'), or null
 * outside a browser. A browser is a scope with a `document` (a page) or a WorkerGlobalScope
 * (a worker); Node has neither (Node >= 21's `navigator` is not enough). `scope` is for tests.
 */
export function browserOrigin(scope: object = globalThis): string | null {
	const g = scope as {
		document?: unknown;
		WorkerGlobalScope?: unknown;
		location?: { origin?: unknown };
	};
	if (typeof g.document === 'undefined' && typeof g.WorkerGlobalScope === 'undefined') return null;
	const origin = g.location?.origin;
	return typeof origin === 'string' && origin !== 'null' ? origin : 'this page';
}

/**
 * What a failed connection means in a browser, besides a judge that is down: the browser
 * refused the answer because the judge does not allow requests from `origin` (CORS), and
 * how each common judge is told to allow them.
 */
export function corsAdvice(origin: string): string {
	return (
		` In a browser a judge that refuses cross-origin requests (CORS) looks the same: it must` +
		` allow requests from ${origin}. Ollama: start it with OLLAMA_ORIGINS=${origin};` +
		` vLLM: --allowed-origins '["${origin}"]'; LM Studio: turn on "Enable CORS" in its server` +
		` settings; any other: put a proxy in front of it that answers preflights with` +
		` Access-Control-Allow-Origin. OpenAI and OpenRouter accept requests from browsers.` +
		` (An https page also cannot call a plain-http judge that is not on this machine.)`
	);
}
