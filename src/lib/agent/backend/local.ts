/**
 * @file The backend that owns the GPU, written once for every host: it holds the
 * registered models by name (model-run.ts) and answers the Backend contract (types.ts).
 * Where the device, the base models and the run stores come from is the host's: Node
 * (node/backend.ts: Dawn, folders, disk) or the browser worker (src/lib/worker: navigator.gpu, URL
 * prefixes, IndexedDB). The device is acquired on first use and shared by the models.
 */
import type { Gpu } from '../../gpu/device';
import type { Checkpoint } from '../../model/hf/checkpoint';
import type { RunStore } from '../../grpo';
import { AgentError } from '../errors';
import { ModelRun } from './model-run';
import type { Backend, ModelSpec } from './types';
import type { WarmStartFiles } from './warm-start-files';
import type { LoadProgress } from '../../util/throttle-progress';

export interface BackendHost {
	acquireGpu(): Promise<Gpu>;
	/** Whether close() destroys the device (default true); false when it is shared. */
	ownsGpu?: boolean;
	/** Opens the base model named by `spec.baseModel` (a folder, a URL prefix), reporting its
	 * download where there is one. */
	openBaseModel(spec: ModelSpec, onProgress?: (p: LoadProgress) => void): Promise<Checkpoint>;
	/** The store of the run `spec.project` / `spec.name`, opened as its one writer (closed by
	 * the run's release). */
	openStore(spec: ModelSpec): Promise<RunStore>;
	/** The files of a warm-start adapter (a folder, a URL prefix): PEFT's two, and the
	 * manifest when there is one. */
	openWarmStart(location: string): Promise<WarmStartFiles>;
	/** How a registering model's load goes: its base's download, its weights' upload. */
	onLoadProgress?(spec: ModelSpec, progress: LoadProgress): void;
	/** GPU memory each model may use (unknown to WebGPU; default none: activations recomputed). */
	memoryBudgetBytes?: number;
}

export function createLocalBackend(host: BackendHost): Backend {
	const runs = new Map<string, ModelRun>();
	let gpu: Promise<Gpu> | undefined;

	/** The device, acquired again when the one held was lost. */
	const device = async (): Promise<Gpu> => {
		const held = await gpu?.catch(() => undefined);
		if (held?.isLost) gpu = undefined;
		gpu ??= host.acquireGpu().catch((error) => {
			gpu = undefined;
			throw error;
		});
		return gpu;
	};
	const run = (name: string): ModelRun => {
		const r = runs.get(name);
		if (!r)
			throw new AgentError(
				'not-registered',
				`no model named '${name}' is registered with this backend; call model.register(backend) first.`
			);
		return r;
	};

	return {
		async register(spec) {
			if (!spec.name || !spec.project)
				throw new AgentError('not-registered', 'a model needs a non-empty name and project.');
			const lost = runs.get(spec.name);
			if (lost?.deviceLost) {
				// its buffers died with the device: load it again (from its saved checkpoint)
				runs.delete(spec.name);
				await lost.release();
			}
			const existing = runs.get(spec.name);
			if (existing) {
				if (
					existing.spec.project !== spec.project ||
					existing.spec.baseModel !== spec.baseModel ||
					existing.spec.warmStart?.adapter !== spec.warmStart?.adapter ||
					(existing.spec.warmStart?.mode ?? 'merged') !== (spec.warmStart?.mode ?? 'merged')
				)
					throw new AgentError(
						'not-registered',
						`a model named '${spec.name}' is already registered with another project, base model or warm start.`
					);
				return existing.registration();
			}
			// The store first: a run another writer holds is refused before anything loads.
			const store = await host.openStore(spec);
			const onProgress =
				host.onLoadProgress && ((p: LoadProgress) => host.onLoadProgress!(spec, p));
			let opened: ModelRun;
			try {
				const [base, g, warmStart] = await Promise.all([
					host.openBaseModel(spec, onProgress),
					device(),
					spec.warmStart ? host.openWarmStart(spec.warmStart.adapter) : undefined
				]);
				opened = await ModelRun.open(spec, {
					gpu: g,
					base,
					store,
					warmStart,
					onProgress,
					memoryBudgetBytes: host.memoryBudgetBytes
				});
			} catch (error) {
				await store.close?.();
				throw error;
			}
			runs.set(spec.name, opened);
			return opened.registration();
		},
		chat: async (name, request, options) => run(name).chat(request, options?.signal),
		train: async (name, input, config) => run(name).train(input, config),
		trainSft: async (name, data, config) => run(name).trainSft(data, config),
		getStep: async (name) => run(name).step,
		log: async (name, metrics) => run(name).log(metrics),
		history: async (name) => run(name).history(),
		deleteCheckpoints: async (name, options) => run(name).deleteCheckpoints(options),
		exportAdapter: async (name, step) => run(name).exportAdapter(step),
		scoreText: async (name, text) => run(name).scoreText(text),
		async unregister(name) {
			const r = runs.get(name);
			runs.delete(name);
			await r?.release();
		},
		async close() {
			const all = [...runs.values()];
			runs.clear();
			await Promise.all(all.map((r) => r.release()));
			const g = gpu;
			gpu = undefined;
			if (host.ownsGpu !== false) (await g?.catch(() => undefined))?.destroy();
		}
	};
}
