/**
 * @file The model side of the backend: at most one loaded model (a URL checkpoint,
 * tokenizer, TransformerModel) answering loadModel, scoreText and unloadModel in protocol.ts
 * data; no worker API, so Node tests run it. One call at a time (another gets 'busy');
 * weight progress is throttled to one message per PROGRESS_INTERVAL_MS.
 */
import type { Gpu } from '../gpu/device';
import { scoreText } from '../model/score-text';
import { checkModelMemory, estimateModelMemory } from '../model/transformer/memory';
import { throttledProgress } from '../util/throttle-progress';
import { Tokenizer } from '../model/tokenizer/tokenizer';
import { TransformerModel } from '../model/transformer/transformer';
import type { ModelConfig } from '../model/types';
import {
	defaultModelCache,
	openCheckpointFromUrl,
	type CacheLike,
	type FetchLike
} from '../model/hf/url-checkpoint';
import { weightSpecs } from '../model/hf/weight-spec';
import {
	toBackendError,
	type BackendApi,
	type BackendError,
	type LoadModelOptions,
	type ModelLoadProgress,
	type ModelSummary,
	type Result,
	type TextScores
} from './protocol';

export interface ModelHostOptions {
	/** Defaults to globalThis.fetch. */
	fetch?: FetchLike;
	/** Defaults to the Cache API (url-checkpoint's defaultModelCache); null: no cache. */
	cache?: CacheLike | null;
}

type ModelApi = Pick<BackendApi, 'loadModel' | 'scoreText' | 'unloadModel'>;

interface Loaded {
	model: TransformerModel;
	tokenizer: Tokenizer;
	summary: ModelSummary;
}

const fail = <T>(kind: BackendError['kind'], message: string): Result<T> => ({
	ok: false,
	error: { kind, message }
});

function describe(config: ModelConfig, url: string): string {
	return `${config.architecture} from ${url} (${config.numLayers} layers, hidden ${config.hiddenSize}, vocab ${config.vocabSize})`;
}

/**
 * The absolute URL of a prefix, with a trailing '/'; a path ('/models/x/') is taken relative
 * to the page's origin where there is one. Undefined unless it is http(s).
 */
export function resolvePrefix(prefix: string): string | undefined {
	const trimmed = prefix.trim();
	if (!trimmed) return undefined;
	let url: URL;
	try {
		url = new URL(trimmed.endsWith('/') ? trimmed : `${trimmed}/`, globalThis.location?.href);
	} catch {
		return undefined;
	}
	return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : undefined;
}

/** The model API over the backend's GPU (`gpu()` acquires it, or returns the current one). */
export function createModelHost(gpu: () => Promise<Gpu>, options: ModelHostOptions = {}): ModelApi {
	let loaded: Loaded | undefined;
	let busy = false;

	function release(): void {
		loaded?.model.release();
		loaded = undefined;
	}

	/** Runs one model call at a time; anything thrown becomes a typed error. */
	async function exclusive<T>(work: () => Promise<Result<T>>): Promise<Result<T>> {
		if (busy)
			return fail(
				'busy',
				'The backend is still loading or scoring a model; wait for it to finish.'
			);
		busy = true;
		try {
			return await work();
		} catch (error) {
			return { ok: false, error: toBackendError(error) };
		} finally {
			busy = false;
		}
	}

	async function load(
		urlPrefix: string,
		onProgress: ((p: ModelLoadProgress) => void) | undefined,
		loadOptions: LoadModelOptions
	): Promise<Result<ModelSummary>> {
		const url = resolvePrefix(urlPrefix);
		if (url === undefined)
			return fail(
				'invalid-input',
				`'${urlPrefix}' is not an http(s) URL: give the folder that holds config.json, e.g. ` +
					'https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct/resolve/main/'
			);
		const budget = loadOptions.memoryBudgetBytes;
		if (budget !== undefined && !(Number.isFinite(budget) && budget > 0))
			return fail(
				'invalid-input',
				`The memory budget must be a positive number of bytes, not ${budget}.`
			);
		release();
		const start = performance.now();
		const device = await gpu();
		const baseFetch: FetchLike = options.fetch ?? ((u, init) => fetch(u, init));
		let requests = 0;
		const countingFetch: FetchLike = (u, init) => {
			requests++;
			return baseFetch(u, init);
		};
		const cache = options.cache !== undefined ? options.cache : await defaultModelCache();
		const report = throttledProgress((p) => onProgress?.(p));
		const checkpoint = await openCheckpointFromUrl(url, {
			fetch: countingFetch,
			cache,
			onProgress: ({ file, loaded: done, total }) =>
				report({ phase: 'download', file, loaded: done, total }),
			// Before any weight byte is downloaded: per-buffer limits, and the budget if given.
			beforeWeights: (config) =>
				checkModelMemory(
					// The declared dtype's plan (f16 matrices for f16 / bf16 files); create()
					// checks again with each tensor's stored dtype.
					estimateModelMemory(config, { limits: device.limits, weightDtype: 'auto' }),
					device.limits,
					budget,
					describe(config, url)
				)
		});
		const { config, files } = checkpoint;
		const tokenizer = Tokenizer.fromJson(
			files.tokenizerJson,
			files.tokenizerConfigJson,
			files.chatTemplate
		);
		const model = await TransformerModel.create(device, config, checkpoint.weights, {
			memoryBudgetBytes: budget,
			onProgress: (done, total) => report({ phase: 'upload', loaded: done, total })
		});
		const specs = weightSpecs(config);
		const parameters = specs.reduce((s, w) => s + w.shape.reduce((a, b) => a * b, 1), 0);
		const summary: ModelSummary = {
			url,
			architecture: config.architecture,
			layers: config.numLayers,
			hiddenSize: config.hiddenSize,
			intermediateSize: config.intermediateSize,
			heads: config.numHeads,
			kvHeads: config.numKvHeads,
			headDim: config.headDim,
			vocabSize: config.vocabSize,
			tokenizerSize: tokenizer.vocabSize,
			tiedEmbeddings: config.tieWordEmbeddings,
			dtype: config.dtype,
			parameters,
			weightBytes: checkpoint.weights.headers.reduce((s, h) => s + h.declaredSize, 0),
			gpuBytes: model.weights.bytes,
			hasChatTemplate: tokenizer.hasChatTemplate,
			source: requests === 0 ? 'cache' : 'network',
			requests,
			cacheAvailable: cache !== null,
			ms: performance.now() - start
		};
		loaded = { model, tokenizer, summary };
		return { ok: true, value: summary };
	}

	async function score(text: string): Promise<Result<TextScores>> {
		if (!loaded) return fail('no-model', 'No model is loaded: load one first.');
		const { model, tokenizer } = loaded;
		if (model.gpu.isLost) {
			release();
			return fail(
				'device-lost',
				'The GPU device was lost, and the model with it. Load the model again (it comes from the cache).'
			);
		}
		const start = performance.now();
		const scored = await scoreText(model, tokenizer, text);
		return { ok: true, value: { ...scored, ms: performance.now() - start } };
	}

	return {
		loadModel: (urlPrefix, onProgress, loadOptions = {}) =>
			exclusive(() => load(urlPrefix, onProgress, loadOptions)),
		scoreText: (text) => exclusive(() => score(text)),
		unloadModel: () =>
			exclusive(async () => {
				release();
				return { ok: true, value: undefined };
			})
	};
}
