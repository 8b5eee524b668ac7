/**
 * @file Streams as the service sends them: a push/pull queue between the engine's callbacks
 * and a stream's reader, and SSE framing for chat chunks (`data:` ... `[DONE]`) and for
 * Responses API events (`event:` + `data:`, no `[DONE]`).
 */
import type { ResponseStreamEvent } from 'openai/resources/responses/responses';
import { toApiError } from './errors';

/** A small async queue: the engine's callbacks push, the stream's reader pulls. */
export class ChunkQueue<T> {
	private items: T[] = [];
	private wake: (() => void) | null = null;
	private closed = false;
	private error: unknown = undefined;

	push(item: T): void {
		this.items.push(item);
		this.wake?.();
	}
	close(error?: unknown): void {
		this.closed = true;
		this.error = error;
		this.wake?.();
	}
	async *drain(): AsyncGenerator<T> {
		for (;;) {
			if (this.items.length) {
				yield this.items.shift()!;
				continue;
			}
			if (this.closed) {
				if (this.error !== undefined) throw this.error;
				return;
			}
			await new Promise<void>((resolve) => (this.wake = resolve));
			this.wake = null;
		}
	}
}

/**
 * Responses API events as SSE frames (`event: TYPE` + `data: JSON`; no `[DONE]`: OpenAI
 * ends the stream after response.completed), or an `error` event on failure.
 */
export async function* responseEventFrames(
	events: AsyncIterable<ResponseStreamEvent>
): AsyncGenerator<string> {
	let sequence = 0;
	try {
		for await (const event of events) {
			sequence = event.sequence_number + 1;
			yield `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
		}
	} catch (error) {
		const { message, code, param } = toApiError(error);
		const event = { type: 'error', code, message, param, sequence_number: sequence };
		yield `event: error\ndata: ${JSON.stringify(event)}\n\n`;
	}
}

/** Chunks as SSE frames, ending with `data: [DONE]`, or with an error frame on failure. */
export async function* sseFrames(chunks: AsyncIterable<unknown>): AsyncGenerator<string> {
	try {
		for await (const chunk of chunks) yield `data: ${JSON.stringify(chunk)}\n\n`;
	} catch (error) {
		yield `data: ${JSON.stringify(toApiError(error).toBody())}\n\n`;
		return;
	}
	yield 'data: [DONE]\n\n';
}
