/**
 * @file The output items this server made lately, by id, so a later request may name them
 * with `{type: 'item_reference', id}` instead of sending them again: what the Vercel AI
 * SDK sends for an earlier turn's items when `store` is on (its default). Nothing else is
 * stored (no `previous_response_id`, no retrieval): the last MAX_ITEMS items are kept in
 * this process's memory, as the input items they stand for, and an older id is a 400 that
 * says to send the item itself.
 */
import type { ResponseOutputItem } from 'openai/resources/responses/responses';

/** Items kept (a message's text is kept whole: bounded by the context, a few KB each). */
export const MAX_ITEMS = 4096;

export class OutputItemMemory {
	readonly #items = new Map<string, Record<string, unknown>>();

	constructor(private readonly max = MAX_ITEMS) {}

	/** Remembers a response's output items as input items (the oldest forgotten past max). */
	remember(output: readonly ResponseOutputItem[]): void {
		for (const item of output) {
			if (item.type === 'message') {
				const text = item.content.map((c) => (c.type === 'output_text' ? c.text : '')).join('');
				this.#put(item.id, { type: 'message', role: 'assistant', content: text });
			} else if (item.type === 'function_call' && item.id)
				this.#put(item.id, {
					type: 'function_call',
					call_id: item.call_id,
					name: item.name,
					arguments: item.arguments
				});
		}
	}

	get(id: string): Record<string, unknown> | undefined {
		return this.#items.get(id);
	}

	#put(id: string, item: Record<string, unknown>): void {
		this.#items.set(id, item);
		while (this.#items.size > this.max) this.#items.delete(this.#items.keys().next().value!);
	}
}
