/**
 * @file ART's `LocalBackend` in the browser: the Backend contract served by the tab's one
 * worker, so a TrainableModel registers as with Node's in-process backend, on the GPUDevice
 * the page's runs use. Failures throw BackendCallError with the error's kind; a crashed
 * worker fails every call with 'worker-failed'.
 */
import { DelegatingBackend } from '../agent/backend/delegate';
import type { Backend } from '../agent/backend/types';
import { spawnBackend, type BackendHandle } from './client';
import { unwrap, type Result } from './protocol';

const METHODS = [
	'register',
	'chat',
	'train',
	'trainSft',
	'getStep',
	'log',
	'history',
	'deleteCheckpoints',
	'exportAdapter',
	'unregister',
	'close'
] as const satisfies readonly (keyof Backend)[];

export class LocalBackend extends DelegatingBackend {
	readonly #handle: BackendHandle;
	readonly #ownsHandle: boolean;

	/** `handle`: the page's worker (default: a worker of its own, ended by close()). */
	constructor(handle?: BackendHandle) {
		const h = handle ?? spawnBackend();
		const inner: Record<string, unknown> = {};
		for (const key of METHODS)
			inner[key] = async (...args: unknown[]) => {
				// comlink proxies nested members: api.agent.register(...) calls the worker's
				const agent = h.api.agent as unknown as Record<
					string,
					(...a: unknown[]) => Promise<Result<unknown>>
				>;
				const method = agent[key];
				return unwrap(await h.guard(method(...args)));
			};
		super(inner as unknown as Backend);
		this.#handle = h;
		this.#ownsHandle = !handle;
	}

	/** Names registered through this backend (the worker may hold the page's runs too). */
	readonly #names = new Set<string>();

	override register: Backend['register'] = async (spec) => {
		const registration = await this.inner.register(spec);
		this.#names.add(spec.name);
		return registration;
	};

	/** (an AbortSignal cannot be sent to the worker: a stopped request's decode runs on there) */
	override chat: Backend['chat'] = (name, request) => this.inner.chat(name, request);

	/** Frees the models registered through this backend (saved runs stay in IndexedDB; the
	 * page's own runs are left alone); ends a worker of its own. */
	override close: Backend['close'] = async () => {
		try {
			if (this.#ownsHandle) await this.inner.close();
			else for (const name of this.#names) await this.inner.unregister(name);
			this.#names.clear();
		} finally {
			if (this.#ownsHandle) this.#handle.terminate();
		}
	};
}
