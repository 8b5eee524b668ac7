/**
 * @file The local client's whole chat completions without HTTP framing: the request object
 * goes to the handler as parsed JSON (`ServiceRequest.json`) and the answer comes back as is.
 * A game's turn then skips the SDK's request building, headers, Response and two JSON round
 * trips: about half the host's time per request (tools/bench/bench-host.ts). Streams and
 * every other route still go through the SDK over localFetch. As the SDK would: errors are
 * its APIError subclasses, the caller's signal and timeout apply, `.asResponse()` and
 * `.withResponse()` work, and the answer is plain JSON data.
 */
import type OpenAI from 'openai';
import { APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import type { LocalHandler } from './client';

type Completions = OpenAI['chat']['completions'];
type RequestOptions = { signal?: AbortSignal | null; timeout?: number | null };

const jsonResponse = (data: unknown) =>
	new Response(JSON.stringify(data), {
		status: 200,
		headers: { 'content-type': 'application/json' }
	});

/**
 * `create` for `client`: non-streaming requests answered by `handler` directly, streams by
 * the SDK's own `create`. `defaultTimeout` is the client's (no timer at or past `noTimer`).
 */
export function directCreate(
	sdkCreate: Completions['create'],
	handler: LocalHandler,
	defaultTimeout: number,
	noTimer: number
): Completions['create'] {
	const create = (params: { stream?: boolean | null }, options?: RequestOptions) => {
		if (params.stream) return sdkCreate(params as never, options as never);
		const data = answer(handler, params, options, defaultTimeout, noTimer);
		return Object.assign(data, {
			asResponse: () => data.then(jsonResponse),
			withResponse: async () => {
				const d = await data;
				return { data: d, response: jsonResponse(d), request_id: null };
			}
		});
	};
	return create as unknown as Completions['create'];
}

async function answer(
	handler: LocalHandler,
	params: unknown,
	options: RequestOptions | undefined,
	defaultTimeout: number,
	noTimer: number
): Promise<unknown> {
	const outer = options?.signal ?? undefined;
	if (outer?.aborted) throw new APIUserAbortError();
	const ms = options?.timeout ?? defaultTimeout;
	// the caller's signal, or a timeout, stops the request's decode (a game's turn has no
	// timeout: its signal goes as is, no controller or listener a request)
	const stop = ms < noTimer ? new AbortController() : undefined;
	const onAbort = () => stop!.abort(outer!.reason);
	if (stop) outer?.addEventListener('abort', onAbort, { once: true });
	let timedOut = false;
	const timer = stop
		? setTimeout(() => {
				timedOut = true;
				stop.abort(new APIConnectionTimeoutError());
			}, ms)
		: undefined;
	let reply;
	try {
		reply = await handler({
			method: 'POST',
			path: '/v1/chat/completions',
			json: params,
			signal: stop?.signal ?? outer
		});
	} catch (error) {
		if (timedOut) throw new APIConnectionTimeoutError();
		if (outer?.aborted) throw new APIUserAbortError();
		throw error;
	} finally {
		clearTimeout(timer);
		outer?.removeEventListener('abort', onAbort);
	}
	if ('sse' in reply) throw new Error('a stream answered a request that asked for none');
	if (reply.status !== 200)
		throw APIError.generate(
			reply.status,
			reply.json as object,
			undefined,
			new Headers({ 'content-type': 'application/json' })
		);
	return reply.json;
}
