/**
 * @file Opens a Hugging Face model folder as published (config.json, tokenizer files,
 * safetensors, optional generation_config.json and chat_template.jinja) from a
 * CheckpointStore (a directory, or a URL prefix). config.json first (an unsupported
 * architecture is refused at once), then the tokenizer, then each weight file's header,
 * checked against the config before any weight data is read or downloaded.
 */
import type { ByteSource } from './byte-source';
import { parseModelConfig } from './config';
import {
	CorruptCheckpointError,
	MissingFileError,
	UnsupportedDTypeError,
	WeightsMismatchError
} from '../errors';
import { READABLE_DTYPES, type SafetensorsHeader } from './safetensors';
import { indexTensors, SafetensorsWeights, type IndexedTensor } from './safetensors-weights';
import type { ModelConfig } from '../types';
import { weightSpecs } from './weight-spec';

export const SINGLE_FILE = 'model.safetensors';
export const INDEX_FILE = 'model.safetensors.index.json';

/** Where a checkpoint's files come from. Names are plain file names ('config.json'). */
export interface CheckpointStore {
	/** The directory or URL prefix, for messages. */
	readonly where: string;
	/** A small file's text; undefined when it does not exist. */
	readText(name: string): Promise<string | undefined>;
	/** A safetensors file's validated header, read without its data; undefined if absent. */
	readHeader(name: string): Promise<SafetensorsHeader | undefined>;
	/** The whole file, ready for range reads; reports bytes as they arrive (sum = size). */
	openWeights(
		name: string,
		header: SafetensorsHeader,
		onBytes: (bytes: number) => void
	): Promise<ByteSource>;
	/** Called once everything loaded and checked (a URL store records the set as cached). */
	complete?(): Promise<void>;
}

export interface CheckpointFiles {
	configJson: string;
	generationConfigJson?: string;
	tokenizerJson: string;
	tokenizerConfigJson: string;
	/** chat_template.jinja when present (5.x); else the template is in tokenizer_config.json. */
	chatTemplate?: string;
}

export interface Checkpoint {
	config: ModelConfig;
	weights: SafetensorsWeights;
	files: CheckpointFiles;
	/** The directory or URL prefix it came from. */
	where: string;
	/** Tensors in the files that the architecture does not read (ignored). */
	unusedTensors: string[];
}

/** Bytes of weight files made available so far, over all of them. */
export interface LoadProgress {
	file: string;
	loaded: number;
	total: number;
}

export interface OpenCheckpointOptions {
	/** Called with monotone `loaded`, the last call having loaded === total. */
	onProgress?: (progress: LoadProgress) => void;
	/**
	 * Called once the config and the weight headers are checked, before any weight data is
	 * read or downloaded: the place to refuse a model over the device's limits, e.g.
	 * `(c) => checkModelMemory(estimateModelMemory(c, { limits }), limits, budget, name)`.
	 */
	beforeWeights?: (config: ModelConfig) => void | Promise<void>;
}

async function required(store: CheckpointStore, name: string): Promise<string> {
	const text = await store.readText(name);
	if (text === undefined) throw new MissingFileError(name, store.where);
	return text;
}

/** The shard files an index names, in order of first mention, and its weight map. */
export function parseIndex(text: string): { files: string[]; weightMap: Map<string, string> } {
	let json: unknown;
	try {
		json = JSON.parse(text);
	} catch (error) {
		throw new CorruptCheckpointError(INDEX_FILE, `not valid JSON (${String(error)})`);
	}
	const map = (json as { weight_map?: unknown } | null)?.weight_map;
	if (map === null || typeof map !== 'object' || Array.isArray(map))
		throw new CorruptCheckpointError(INDEX_FILE, 'no "weight_map" object');
	const weightMap = new Map<string, string>();
	for (const [tensor, file] of Object.entries(map)) {
		// Shards are plain names beside the index; anything else could escape the folder.
		if (typeof file !== 'string' || !/^[\w.-]+$/.test(file) || file.startsWith('.'))
			throw new CorruptCheckpointError(
				INDEX_FILE,
				`weight_map gives ${JSON.stringify(file)}, not a plain file name`,
				tensor
			);
		weightMap.set(tensor, file);
	}
	if (weightMap.size === 0) throw new CorruptCheckpointError(INDEX_FILE, 'weight_map is empty');
	return { files: [...new Set(weightMap.values())], weightMap };
}

/**
 * Checks the tensors against what the config implies: every expected tensor present, in
 * its shape (WeightsMismatchError listing all that are not) and a readable dtype
 * (UnsupportedDTypeError). Returns the names the architecture does not use.
 */
export function checkTensors(config: ModelConfig, index: Map<string, IndexedTensor>): string[] {
	const specs = weightSpecs(config);
	const missing: string[] = [];
	const wrongShape: { name: string; expected: number[]; actual: number[] }[] = [];
	for (const spec of specs) {
		const entry = index.get(spec.name);
		if (!entry) {
			missing.push(spec.name);
			continue;
		}
		const actual = entry.tensor.shape;
		if (actual.length !== spec.shape.length || actual.some((d, i) => d !== spec.shape[i]))
			wrongShape.push({ name: spec.name, expected: spec.shape, actual: [...actual] });
	}
	if (missing.length || wrongShape.length) throw new WeightsMismatchError(missing, wrongShape);
	for (const spec of specs) {
		const { tensor, header } = index.get(spec.name)!;
		if (!Object.hasOwn(READABLE_DTYPES, tensor.dtype))
			throw new UnsupportedDTypeError(header.file, tensor.name, tensor.dtype);
	}
	const used = new Set(specs.map((s) => s.name));
	return [...index.keys()].filter((n) => !used.has(n));
}

/** Opens and checks a checkpoint; see the file comment for the order of work. */
export async function openCheckpoint(
	store: CheckpointStore,
	options: OpenCheckpointOptions = {}
): Promise<Checkpoint> {
	const configJson = await required(store, 'config.json');
	const generationConfigJson = await store.readText('generation_config.json');
	const config = parseModelConfig(configJson, generationConfigJson);
	const tokenizerJson = await required(store, 'tokenizer.json');
	const tokenizerConfigJson = await required(store, 'tokenizer_config.json');
	const chatTemplate = await store.readText('chat_template.jinja');

	const indexText = await store.readText(INDEX_FILE);
	const index = indexText === undefined ? undefined : parseIndex(indexText);
	const names = index ? index.files : [SINGLE_FILE];
	const headers: SafetensorsHeader[] = [];
	for (const name of names) {
		const header = await store.readHeader(name);
		if (!header) throw new MissingFileError(name, store.where);
		headers.push(header);
	}
	const tensors = indexTensors(headers);
	if (index)
		for (const [tensor, file] of index.weightMap) {
			const at = tensors.get(tensor);
			if (!at || at.header.file !== file)
				throw new CorruptCheckpointError(
					INDEX_FILE,
					`weight_map puts the tensor in '${file}', which does not hold it`,
					tensor
				);
		}
	const unusedTensors = checkTensors(config, tensors);
	await options.beforeWeights?.(config);

	const total = headers.reduce((s, h) => s + h.declaredSize, 0);
	let loaded = 0;
	options.onProgress?.({ file: names[0], loaded, total });
	const sources = new Map<string, ByteSource>();
	for (const header of headers) {
		const source = await store.openWeights(header.file, header, (bytes) => {
			loaded += bytes;
			options.onProgress?.({ file: header.file, loaded, total });
		});
		sources.set(header.file, source);
	}
	await store.complete?.();

	const files: CheckpointFiles = { configJson, tokenizerJson, tokenizerConfigJson };
	if (generationConfigJson !== undefined) files.generationConfigJson = generationConfigJson;
	if (chatTemplate !== undefined) files.chatTemplate = chatTemplate;
	return {
		config,
		weights: new SafetensorsWeights(headers, sources),
		files,
		where: store.where,
		unusedTensors
	};
}
