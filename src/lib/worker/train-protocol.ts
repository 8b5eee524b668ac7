/**
 * @file What crosses the training worker's boundary: every Backend method (agent/backend/
 * types.ts) as a call that resolves to a Result instead of throwing, because comlink
 * carries a thrown error's message but not its `kind`. The page (local-backend.ts) turns
 * a failed Result back into a thrown BackendCallError with that kind.
 */
import type { Backend } from '../agent/backend/types';

export type Settled<T> = { ok: true; value: T } | { ok: false; kind: string; message: string };

/** The Backend with each method's promise settled into a Result. */
export type TrainWorkerApi = {
	[K in keyof Backend]: (
		...args: Parameters<Backend[K]>
	) => Promise<Settled<Awaited<ReturnType<Backend[K]>>>>;
};

/** A failed backend call, as the page sees it: the error's kind survives the boundary. */
export class BackendCallError extends Error {
	constructor(
		readonly kind: string,
		message: string
	) {
		super(message);
		this.name = 'BackendCallError';
	}
}

/** Settles a call: its value, or its error's kind ('internal' for an untyped throw) and message. */
export async function settle<T>(call: () => Promise<T>): Promise<Settled<T>> {
	try {
		return { ok: true, value: await call() };
	} catch (error) {
		const kind = (error as { kind?: unknown }).kind;
		return {
			ok: false,
			kind: typeof kind === 'string' ? kind : 'internal',
			message: error instanceof Error ? error.message : String(error)
		};
	}
}

export function unwrap<T>(result: Settled<T>): T {
	if (result.ok) return result.value;
	throw new BackendCallError(result.kind, result.message);
}
