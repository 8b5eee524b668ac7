/**
 * @file ART's `LocalBackend` in the browser: spawns the training worker (train.worker.ts,
 * bundled by Vite from `new URL(..., import.meta.url)`) and presents it as a Backend, so a
 * TrainableModel in the page registers with it exactly as with Node's in-process backend
 * (agent/backend/node.ts). A call that fails in the worker throws BackendCallError with the
 * error's kind; a worker that fails to load or crashes fails every pending and later call
 * with kind 'worker-failed' instead of leaving it waiting.
 */
import { wrap, type Remote } from 'comlink';
import { DelegatingBackend } from '../agent/backend/delegate';
import type { Backend } from '../agent/backend/types';
import { BackendCallError, unwrap, type Settled, type TrainWorkerApi } from './train-protocol';

function workerFailure(worker: Worker): Promise<never> {
	return new Promise<never>((_, reject) => {
		const fail = (message: string) => reject(new BackendCallError('worker-failed', message));
		worker.addEventListener('error', (event) => {
			event.preventDefault();
			fail(`The training worker failed: ${event.message || 'it could not be loaded'}.`);
		});
		worker.addEventListener('messageerror', () =>
			fail('A message from the training worker could not be read.')
		);
	});
}

export class LocalBackend extends DelegatingBackend {
	readonly #worker: Worker;

	constructor() {
		const worker = new Worker(new URL('./train.worker.ts', import.meta.url), {
			type: 'module',
			name: 'tabrl-train'
		});
		const remote: Remote<TrainWorkerApi> = wrap<TrainWorkerApi>(worker);
		const failed = workerFailure(worker);
		failed.catch(() => undefined);
		const call =
			<K extends keyof Backend>(key: K) =>
			async (...args: Parameters<Backend[K]>) => {
				const method = remote[key] as unknown as (
					...a: Parameters<Backend[K]>
				) => Promise<Settled<Awaited<ReturnType<Backend[K]>>>>;
				return unwrap(await Promise.race([method(...args), failed]));
			};
		const inner: Record<string, unknown> = {};
		for (const key of [
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
		] as const)
			inner[key] = call(key);
		super(inner as unknown as Backend);
		this.#worker = worker;
	}

	/** Frees the GPU and ends the worker (saved runs stay in IndexedDB). */
	override close: Backend['close'] = async () => {
		try {
			await this.inner.close();
		} finally {
			this.#worker.terminate();
		}
	};
}
