/**
 * @file The page's side of the worker boundary: spawns the tab's one worker (tabrl.worker.ts,
 * bundled by Vite from `new URL(..., import.meta.url)`) and wraps it with comlink. A worker
 * that fails to load or crashes settles `failed`; `guard` races a call against it, so the
 * page gets a typed 'worker-failed' error instead of waiting forever.
 */
import { proxy, transfer, wrap, type Remote } from 'comlink';
import type { Recipe, RunEvent } from '../run';
import type {
	BackendApi,
	BackendError,
	BackendEvent,
	LoadModelOptions,
	ModelLoadProgress,
	Result,
	RunApi,
	SelfTestProgress,
	StartRunOptions,
	WorkerApi
} from './protocol';

export interface BackendHandle extends Omit<RunApi, 'startRun'> {
	readonly api: Remote<WorkerApi>;
	/** Settles if the worker fails to load or throws outside a call. */
	readonly failed: Promise<BackendError>;
	/** Races a call against `failed`: a dead worker becomes an error result, not a hang. */
	guard<T>(call: Promise<Result<T>>): Promise<Result<T>>;
	/** Subscribes to unrequested events (device loss). */
	subscribe(listener: (event: BackendEvent) => void): Promise<void>;
	runSelfTest(
		onProgress: (progress: SelfTestProgress) => void
	): ReturnType<BackendApi['runSelfTest']>;
	loadModel(
		urlPrefix: string,
		onProgress: (progress: ModelLoadProgress) => void,
		options?: LoadModelOptions
	): ReturnType<BackendApi['loadModel']>;
	scoreText(text: string): ReturnType<BackendApi['scoreText']>;
	unloadModel(): ReturnType<BackendApi['unloadModel']>;
	startRun(
		name: string,
		recipe: Recipe,
		onEvent: (event: RunEvent) => void,
		options?: StartRunOptions
	): ReturnType<RunApi['startRun']>;
	terminate(): void;
}

export function spawnBackend(): BackendHandle {
	const worker = new Worker(new URL('./tabrl.worker.ts', import.meta.url), {
		type: 'module',
		name: 'tabrl'
	});
	const failed = new Promise<BackendError>((resolve) => {
		worker.addEventListener('error', (event) => {
			event.preventDefault();
			resolve({
				kind: 'worker-failed',
				message: `The backend worker failed: ${event.message || 'it could not be loaded'}.`
			});
		});
		worker.addEventListener('messageerror', () =>
			resolve({
				kind: 'worker-failed',
				message: 'A message from the backend worker could not be read.'
			})
		);
	});
	const api = wrap<WorkerApi>(worker);
	const guard = <T>(call: Promise<Result<T>>): Promise<Result<T>> =>
		Promise.race([call, failed.then((error): Result<T> => ({ ok: false, error }))]);
	return {
		api,
		failed,
		guard,
		subscribe: (listener) => api.subscribe(proxy(listener)),
		runSelfTest: (onProgress) => guard(api.runSelfTest(proxy(onProgress))),
		loadModel: (urlPrefix, onProgress, options) =>
			guard(api.loadModel(urlPrefix, proxy(onProgress), options)),
		scoreText: (text) => guard(api.scoreText(text)),
		unloadModel: () => guard(api.unloadModel()),
		startRun: (name, recipe, onEvent, options) =>
			guard(api.startRun(name, recipe, proxy(onEvent), options)),
		stopRun: () => guard(api.stopRun()),
		continueRun: (keepStepping, settings) => guard(api.continueRun(keepStepping, settings)),
		listRuns: () => guard(api.listRuns()),
		runHistory: (name) => guard(api.runHistory(name)),
		scoreRunText: (name, text) => guard(api.scoreRunText(name, text)),
		deleteRun: (name) => guard(api.deleteRun(name)),
		exportRun: (name) => guard(api.exportRun(name)),
		importRun: (archive, name) => guard(api.importRun(transfer(archive, [archive.buffer]), name)),
		terminate: () => worker.terminate()
	};
}
