/**
 * @file Warm starts: a PEFT adapter an environment's preset starts from (made by
 * tools/make-warm-start.ts), shipped with a manifest naming its base by a hash of its
 * tensors (sha256 over each tensor in name order: UTF-8 name, a 0 byte, stored bytes).
 * 'merged' folds it into the weights as they are read, so a fresh adapter trains on top
 * and the KL reference is the warm-start policy; 'stacked' loads it as the adapter.
 */
import { WarmStartMismatchError } from '../errors';
import { mergeProjection } from './lora-merge';
import type { PeftAdapter } from './peft-adapter';
import type { SafetensorsWeights } from './safetensors-weights';
import type { ModelConfig, StoredTensorInfo, WeightSource } from '../types';
import { projectionPath, type ProjectionName } from './weight-spec';

export const WARM_START_MANIFEST = 'warm-start.json';

export type WarmStartMode = 'merged' | 'stacked';

/** warm-start.json: how an adapter was made and which base it belongs to. */
export interface WarmStartManifest {
	format: 'tabrl-warm-start/1';
	environment: string;
	/**
	 * The base it was made for: a name for messages, the tensors' hash (see the header) and
	 * tokenizer.json's sha256 (two bases may share every weight and read text differently;
	 * absent in manifests made before it was recorded).
	 */
	base: { name: string; tensorsSha256: string; tokenizerSha256?: string };
	/** sha256 of adapter_model.safetensors as committed. */
	adapterSha256: string;
	/** The command that made it, and its seed. */
	command: string;
	seed: number;
	/** ISO date. */
	made: string;
	/** What it scores (environment-specific numbers, e.g. greedy score and illegal moves). */
	evaluation?: Record<string, number>;
	/** Free text: the SFT schedule, where it ran. */
	notes?: string;
}

const hex = (buffer: ArrayBuffer) =>
	[...new Uint8Array(buffer)].map((b) => b.toString(16).padStart(2, '0')).join('');

export async function sha256Hex(bytes: Uint8Array): Promise<string> {
	return hex(await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>));
}

/** The base weights' hash as the manifest records it (see the file's header). */
export async function tensorsSha256(weights: SafetensorsWeights): Promise<string> {
	const names = [...weights.index.keys()].sort();
	const parts: Uint8Array[] = [];
	let size = 0;
	const encoder = new TextEncoder();
	for (const name of names) {
		const label = encoder.encode(name);
		const bytes = await weights.readBytes(name);
		parts.push(label, new Uint8Array(1), bytes);
		size += label.length + 1 + bytes.length;
	}
	const all = new Uint8Array(size);
	let at = 0;
	for (const p of parts) {
		all.set(p, at);
		at += p.length;
	}
	return sha256Hex(all);
}

/** Parses warm-start.json; a WarmStartMismatchError says what is wrong with it. */
export function parseWarmStartManifest(text: string, where: string): WarmStartManifest {
	let value: unknown;
	try {
		value = JSON.parse(text);
	} catch (error) {
		throw new WarmStartMismatchError(`${where}: warm-start.json is not JSON (${error}).`);
	}
	const m = value as Partial<WarmStartManifest>;
	if (
		m?.format !== 'tabrl-warm-start/1' ||
		typeof m.base?.tensorsSha256 !== 'string' ||
		typeof m.adapterSha256 !== 'string' ||
		typeof m.environment !== 'string'
	)
		throw new WarmStartMismatchError(
			`${where}: warm-start.json is not a TabRL warm-start manifest (format tabrl-warm-start/1 with base.tensorsSha256, adapterSha256, environment).`
		);
	return m as WarmStartManifest;
}

/**
 * Refuses an adapter made for another base: compares the manifest's base hash with the
 * weights' own, and the adapter file's hash with the manifest's.
 */
export async function checkWarmStart(
	manifest: WarmStartManifest,
	weights: SafetensorsWeights,
	adapterBytes: Uint8Array,
	where: string,
	tokenizerJson?: string
): Promise<void> {
	const adapterHash = await sha256Hex(adapterBytes);
	if (adapterHash !== manifest.adapterSha256)
		throw new WarmStartMismatchError(
			`${where}: adapter_model.safetensors has sha256 ${adapterHash}, the manifest says ${manifest.adapterSha256}: the file was changed or cut off.`
		);
	const baseHash = await tensorsSha256(weights);
	if (baseHash !== manifest.base.tensorsSha256)
		throw new WarmStartMismatchError(
			`${where}: this warm start was made for ${manifest.base.name} (tensors sha256 ${manifest.base.tensorsSha256.slice(0, 12)}…), ` +
				`not for this base model (${baseHash.slice(0, 12)}…). Train without a warm start, or make one for this base (tools/make-warm-start.ts).`
		);
	const wanted = manifest.base.tokenizerSha256;
	if (wanted !== undefined && tokenizerJson !== undefined) {
		const tokenizerHash = await sha256Hex(new TextEncoder().encode(tokenizerJson));
		if (tokenizerHash !== wanted)
			throw new WarmStartMismatchError(
				`${where}: this warm start was made for ${manifest.base.name} with another tokenizer (tokenizer.json sha256 ${wanted.slice(0, 12)}…, this base's ${tokenizerHash.slice(0, 12)}…): the same weights would read other tokens. Train without a warm start, or make one for this base (tools/make-warm-start.ts).`
			);
	}
}

/**
 * The base weights with an adapter folded into its targeted projections, read lazily:
 * merged tensors come out as f32 (the merge is f32 arithmetic); the rest as stored.
 */
export class MergedWeights implements WeightSource {
	/** weight name -> the projection it is */
	readonly #merged = new Map<string, { layer: number; module: ProjectionName }>();

	constructor(
		readonly config: ModelConfig,
		readonly base: WeightSource,
		readonly adapter: PeftAdapter
	) {
		const { numLayers } = config;
		for (let layer = 0; layer < numLayers; layer++)
			for (const m of adapter.config.targetModules)
				this.#merged.set(`${projectionPath(layer, m)}.weight`, { layer, module: m });
		if (config.numLayers > 0 && !base.list().some((t) => this.#merged.has(t.name)))
			throw new WarmStartMismatchError(
				'the warm-start adapter targets no weight of this base model.'
			);
		// The optional raw readers are offered only where the base has them and the tensor
		// is not merged (a merged tensor exists only as f32).
		if (base.readF16Bits)
			this.readF16Bits = (name) =>
				this.#merged.has(name) ? this.#notRaw(name) : base.readF16Bits!(name);
		if (base.readBf16Bits)
			this.readBf16Bits = (name) =>
				this.#merged.has(name) ? this.#notRaw(name) : base.readBf16Bits!(name);
		if (base.readF32Rows)
			this.readF32Rows = async (name, start, count) => {
				if (!this.#merged.has(name)) return base.readF32Rows!(name, start, count);
				const all = await this.readF32(name);
				const cols = all.length / this.#rows(name);
				return all.slice(start * cols, (start + count) * cols);
			};
	}

	readF16Bits?: (name: string) => Promise<Uint16Array>;
	readBf16Bits?: (name: string) => Promise<Uint16Array>;
	readF32Rows?: (name: string, rowStart: number, rowCount: number) => Promise<Float32Array>;

	list(): StoredTensorInfo[] {
		return this.base
			.list()
			.map((t) => (this.#merged.has(t.name) ? { ...t, dtype: 'float32' as const } : t));
	}

	async readF32(name: string): Promise<Float32Array> {
		const data = await this.base.readF32(name);
		if (!this.#merged.has(name)) return data;
		const { layer, module } = this.#merged.get(name)!;
		const shape = this.base.list().find((t) => t.name === name)!.shape;
		return mergeProjection(this.config, layer, module, { name, shape, data }, this.adapter);
	}

	#rows(name: string): number {
		return this.base.list().find((t) => t.name === name)?.shape[0] ?? 1;
	}

	#notRaw(name: string): never {
		throw new RangeError(`${name} is merged with the warm start: read it as f32`);
	}
}
