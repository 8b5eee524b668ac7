/**
 * @file Load on an OpenAI-compatible server over HTTP, shared by the soak benchmark
 * (serve-soak.ts) and the CI soak test: `clients` loops that each pick, per request, a stream
 * dropped after a chunk or two, a stream or completion read to the end, or a bad body
 * (malformed JSON, text/plain, one over the body limit, a prototype key); and a prober that
 * times `GET /v1/models` and `GET /health` meanwhile (what a load balancer sees).
 */
import { Rng } from '../../src/lib/util/random';

export const LOAD_KINDS = [
	'drop',
	'stream',
	'whole',
	'bad-json',
	'text-plain',
	'too-big',
	'proto'
] as const;
export type LoadKind = (typeof LOAD_KINDS)[number];

export interface LoadOptions {
	url: string;
	model: string;
	clients: number;
	/** performance.now() at which the clients stop starting requests. */
	until: number;
	/** Bytes of the over-limit body (at least the server's body limit + 1). */
	tooBigBytes: number;
	/** Bearer token, when the server asks for one. */
	apiKey?: string;
}

/** What the clients did: requests by kind, and answers by "kind status". */
export interface LoadReport {
	counts: Partial<Record<LoadKind, number>>;
	statuses: Record<string, number>;
	/** Streams answered 200 that did not end with `data: [DONE]`. */
	unfinishedStreams: number;
}

/**
 * The statuses each kind may get: 429 whenever the server holds its most requests (admission
 * comes before parsing), except for what is refused at the door (content type, body size).
 */
export const EXPECTED_STATUS: Record<LoadKind, readonly string[]> = {
	drop: ['200', '429'],
	stream: ['200', '429'],
	whole: ['200', '429'],
	'bad-json': ['400', '429'],
	'text-plain': ['415'],
	'too-big': ['413'],
	proto: ['400', '429']
};

const USER = [{ role: 'user' as const, content: 'hello there' }];

export async function runLoad(o: LoadOptions): Promise<LoadReport> {
	const report: LoadReport = { counts: {}, statuses: {}, unfinishedStreams: 0 };
	const auth: Record<string, string> = o.apiKey ? { authorization: `Bearer ${o.apiKey}` } : {};
	const tooBig = 'x'.repeat(o.tooBigBytes);
	const post = (body: string, init: { signal?: AbortSignal; contentType?: string } = {}) =>
		fetch(`${o.url}/v1/chat/completions`, {
			method: 'POST',
			body,
			signal: init.signal,
			headers: { 'content-type': init.contentType ?? 'application/json', ...auth }
		});
	async function client(seed: number): Promise<void> {
		const rng = new Rng(seed);
		while (performance.now() < o.until) {
			const kind = LOAD_KINDS[rng.int(LOAD_KINDS.length)];
			report.counts[kind] = (report.counts[kind] ?? 0) + 1;
			const maxTokens = 2 + rng.int(6);
			const request = { model: o.model, messages: USER, max_tokens: maxTokens };
			const stream = JSON.stringify({ ...request, stream: true });
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
					const res = await post(kind === 'stream' ? stream : JSON.stringify(request));
					status = res.status;
					const text = await res.text();
					if (status === 200 && kind === 'stream' && !text.endsWith('data: [DONE]\n\n'))
						report.unfinishedStreams++;
				} else {
					const body =
						kind === 'bad-json'
							? '{"model": '
							: kind === 'too-big'
								? tooBig
								: `{"model": "${o.model}", "messages": [], "__proto__": {}}`;
					const res = await post(body, kind === 'text-plain' ? { contentType: 'text/plain' } : {});
					status = res.status;
					await res.text();
				}
			} catch (error) {
				if ((error as Error).name !== 'AbortError') throw error;
			}
			const key = `${kind} ${status}`;
			report.statuses[key] = (report.statuses[key] ?? 0) + 1;
		}
	}
	await Promise.all(Array.from({ length: o.clients }, (_, i) => client(i + 1)));
	return report;
}

/** Answers whose status is not the one their kind must get, as "kind status xN" lines. */
export function unexpectedStatuses(report: LoadReport): string[] {
	return Object.entries(report.statuses)
		.filter(([key]) => {
			const [kind, status] = key.split(' ') as [LoadKind, string];
			return !EXPECTED_STATUS[kind].includes(status);
		})
		.map(([key, n]) => `${key} x${n}`);
}

export interface ProbeReport {
	/** Milliseconds per probe, by path. */
	ms: Record<string, number[]>;
	/** Probes that did not answer 200. */
	failures: string[];
	/** Probes answered while `busy()` held (0 without it): a route that waits for decoding to drain answers none under steady load. */
	answeredBusy: number;
}

export interface ProbeOptions {
	everyMs?: number;
	apiKey?: string;
	/** Read when each answer arrives, e.g. "the server has requests in flight" (same process only). */
	busy?: () => boolean;
}

/** Times GET `paths` in turn, one at a time every `everyMs` (50), until `until`. */
export async function probeLatency(
	url: string,
	paths: readonly string[],
	until: number,
	{ everyMs = 50, apiKey, busy }: ProbeOptions = {}
): Promise<ProbeReport> {
	const report: ProbeReport = {
		ms: Object.fromEntries(paths.map((p) => [p, []])),
		failures: [],
		answeredBusy: 0
	};
	const headers = apiKey ? { authorization: `Bearer ${apiKey}` } : undefined;
	for (let i = 0; performance.now() < until; i++) {
		const path = paths[i % paths.length];
		const t0 = performance.now();
		const res = await fetch(`${url}${path}`, { headers });
		await res.text();
		report.ms[path].push(performance.now() - t0);
		if (busy?.()) report.answeredBusy++;
		if (res.status !== 200) report.failures.push(`${path} ${res.status}`);
		await new Promise((r) => setTimeout(r, everyMs));
	}
	return report;
}

/** The q-quantile (0..1) of `xs` by the nearest rank; NaN when empty. */
export function quantile(xs: readonly number[], q: number): number {
	if (!xs.length) return NaN;
	const sorted = [...xs].sort((a, b) => a - b);
	return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}
