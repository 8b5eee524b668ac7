/**
 * @file The output items this server made lately, by id, so a request may name one with
 * `{type: 'item_reference', id}` (what the Vercel AI SDK sends with `store` on). The last
 * MAX_ITEMS are kept in memory as the input items they stand for; an older id is a 400
 * that says to send the item itself. No other state is kept.
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
