/**
 * @file The tab's one Web Worker: owns the GPUDevice and serves the page through comlink
 * (protocol.ts): self-test and scoring (backend.ts), runs (run-host.ts), and ART's Backend
 * for agent code in the page (local-backend.ts). Every call settles into a Result; a chat
 * reply's SSE stream is transferred, not copied.
 */
import { expose, transfer } from 'comlink';
import { createLocalBackend } from '../agent/backend/local';
import type { Backend } from '../agent/backend/types';
import { readWarmStartFiles } from '../agent/backend/warm-start-files';
import { IdbRunStore } from '../grpo/store/idb-run-store';
import { defaultModelCache, isAbsent, openCheckpointFromUrl } from '../model/hf/url-checkpoint';
import { createBackend } from './backend';
import { resolvePrefix } from './model-host';
import { settle, type AgentApi, type WorkerApi } from './protocol';
import { createRunHost } from './run-host';

/** The project of the page's runs in IndexedDB (runs are `${PROJECT}/${name}`). */
const PROJECT = 'tabrl-page';

const invalid = (message: string) => Object.assign(new Error(message), { kind: 'invalid-input' });

function resolveUrl(location: string, what: string): string {
	const url = resolvePrefix(location);
	if (!url)
		throw invalid(
			`The ${what} '${location}' is not an http(s) URL prefix: give the folder that holds its files, e.g. /models/tabrl-tiny/ or https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct/resolve/main/`
		);
	return url;
}

const core = createBackend();
const agent = createLocalBackend({
	acquireGpu: core.gpu,
	ownsGpu: false,
	async openBaseModel(spec, onProgress) {
		return openCheckpointFromUrl(resolveUrl(spec.baseModel, 'base model'), {
			cache: await defaultModelCache(),
			onProgress: ({ file, loaded, total }) =>
				onProgress?.({ phase: 'download', file, loaded, total })
		});
	},
	// (runs is made below; a load reports only once a run registers its model)
	onLoadProgress: (spec, progress) => runs.loadProgress(spec.name, progress),
	openStore: (spec) => IdbRunStore.open(`${spec.project}/${spec.name}`, { write: true }),
	openWarmStart: (location) => {
		const url = resolveUrl(location, 'warm start');
		return readWarmStartFiles(url, async (name) => {
			const response = await fetch(new URL(name, url));
			if (isAbsent(response)) return undefined;
			if (!response.ok)
				throw Object.assign(new Error(`${url}${name}: HTTP ${response.status}`), {
					kind: 'download-failed'
				});
			return new Uint8Array(await response.arrayBuffer());
		});
	}
});
const runs = createRunHost({
	backend: agent,
	project: PROJECT,
	resolveLocation: resolveUrl,
	store: (name, options) => IdbRunStore.open(`${PROJECT}/${name}`, options),
	bundledRoot: '/',
	async listRuns() {
		const all = await IdbRunStore.listRuns();
		return all.filter((r) => r.run.startsWith(`${PROJECT}/`)).map((r) => r.meta);
	},
	deleteRun: (name) => IdbRunStore.deleteRun(`${PROJECT}/${name}`),
	gpu: core.gpu
});

const agentApi = {} as Record<keyof Backend, unknown>;
for (const key of Object.keys(agent) as (keyof Backend)[]) {
	const method = agent[key] as (...args: unknown[]) => Promise<unknown>;
	agentApi[key] = (...args: unknown[]) => settle(() => method(...args));
}
agentApi.chat = async (...args: Parameters<Backend['chat']>) => {
	const result = await settle(() => agent.chat(...args));
	if (result.ok && 'sse' in result.value) return transfer(result, [result.value.sse]);
	return result;
};

// (the device getter stays in the worker: a GPU object cannot cross the boundary)
const api: WorkerApi = {
	probe: core.probe,
	listCases: core.listCases,
	runSelfTest: core.runSelfTest,
	subscribe: core.subscribe,
	simulateDeviceLoss: core.simulateDeviceLoss,
	loadModel: core.loadModel,
	scoreText: core.scoreText,
	unloadModel: core.unloadModel,
	agent: agentApi as AgentApi,
	startRun: (name, recipe, onEvent, options) =>
		settle(() => runs.startRun(name, recipe, onEvent, options)),
	stopRun: () => settle(() => runs.stopRun()),
	continueRun: (keepStepping, settings) => settle(() => runs.continueRun(keepStepping, settings)),
	listRuns: () => settle(() => runs.listRuns()),
	runHistory: (name) => settle(() => runs.runHistory(name)),
	scoreRunText: (name, text) =>
		settle(async () => {
			const start = performance.now();
			const scored = await runs.scoreRunText(name, text);
			return { ...scored, run: name, ms: performance.now() - start };
		}),
	deleteRun: (name) => settle(() => runs.deleteRun(name)),
	async exportRun(name) {
		const result = await settle(() => runs.exportRun(name));
		return result.ok ? transfer(result, [result.value.buffer]) : result;
	},
	importRun: (archive, name) => settle(() => runs.importRun(archive, name))
};

expose(api);
