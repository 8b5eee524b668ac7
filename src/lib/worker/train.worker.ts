/**
 * @file The training Web Worker: ART's LocalBackend in the browser. It owns the GPU
 * (navigator.gpu), loads base models from URL prefixes (through the Cache API, as the Model
 * panel does), keeps each run in IndexedDB, and serves the Backend contract to the page
 * through comlink, each call settled into a Result (train-protocol.ts). A chat reply's SSE
 * stream is transferred, not copied: its frames flow to the page as they are decoded.
 */
import { expose, transfer } from 'comlink';
import { createLocalBackend } from '../agent/backend/local';
import type { Backend } from '../agent/backend/types';
import { acquireGpu } from '../gpu/device';
import { IdbRunStore } from '../grpo/idb-run-store';
import { defaultModelCache, openCheckpointFromUrl } from '../model/url-checkpoint';
import { resolvePrefix } from './model-host';
import { settle, type TrainWorkerApi } from './train-protocol';

const backend = createLocalBackend({
	acquireGpu: () => acquireGpu(),
	async openBaseModel(spec) {
		const url = resolvePrefix(spec.baseModel);
		if (!url)
			throw Object.assign(
				new Error(`baseModel '${spec.baseModel}' is not an http(s) URL prefix.`),
				{
					kind: 'invalid-input'
				}
			);
		return openCheckpointFromUrl(url, { cache: await defaultModelCache() });
	},
	openStore: (spec) => IdbRunStore.open(`${spec.project}/${spec.name}`)
});

const api = {} as Record<keyof Backend, unknown>;
for (const key of Object.keys(backend) as (keyof Backend)[]) {
	const method = backend[key] as (...args: unknown[]) => Promise<unknown>;
	api[key] = (...args: unknown[]) => settle(() => method(...args));
}
api.chat = async (...args: Parameters<Backend['chat']>) => {
	const result = await settle(() => backend.chat(...args));
	if (result.ok && 'sse' in result.value) return transfer(result, [result.value.sse]);
	return result;
};

expose(api as TrainWorkerApi);
