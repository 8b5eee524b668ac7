/**
 * @file Folds a LoRA adapter into its base weights as peft's `merge_and_unload` does:
 * W' = W + (alpha / r) B A per targeted projection (W [out, in], A [r, in], B [out, r]).
 * A new adapter can train on top, its "LoRA off" reference being the merged model. Pure:
 * f32 tensors in and out (the caller writes them in the file's dtype).
 */
import { LoraConfigError } from '../errors';
import { peftName, type LoraConfig } from '../transformer/lora';
import type { PeftAdapter } from './peft-adapter';
import type { ModelConfig } from '../types';
import { projectionPath, projectionShape, type ProjectionName } from './weight-spec';

export interface NamedTensor {
	name: string;
	shape: readonly number[];
	data: Float32Array;
}

/** W + (alpha / r) B A in place of every targeted projection weight (its other fields, e.g.
 * a dtype, kept); other tensors as given. */
export function mergeLora<T extends NamedTensor>(
	model: ModelConfig,
	tensors: readonly T[],
	adapter: PeftAdapter
): T[] {
	const byName = new Map(tensors.map((t) => [t.name, t]));
	const merged = new Map<string, T>();
	for (let layer = 0; layer < model.numLayers; layer++)
		for (const m of adapter.config.targetModules) {
			const name = `${projectionPath(layer, m)}.weight`;
			const w = byName.get(name);
			if (!w) throw new LoraConfigError(`cannot merge the adapter into ${name}: no such weight`);
			merged.set(name, { ...w, data: mergeProjection(model, layer, m, w, adapter) });
		}
	return tensors.map((t) => merged.get(t.name) ?? t);
}

/** One projection's W + (alpha / r) B A (a new array; `w` is not changed). */
export function mergeProjection(
	model: ModelConfig,
	layer: number,
	m: ProjectionName,
	w: Omit<NamedTensor, 'name'> & { name?: string },
	adapter: PeftAdapter
): Float32Array {
	const { rank: r, alpha }: LoraConfig = adapter.config;
	const scale = alpha / r;
	const name = w.name ?? `${projectionPath(layer, m)}.weight`;
	const a = adapter.params.get(peftName(layer, m, 'A'));
	const b = adapter.params.get(peftName(layer, m, 'B'));
	const [out, inF] = projectionShape(model, m);
	// [out, in] as the weight file stores it: an equal element count in another layout
	// would merge transposed
	const layoutOk = w.shape.length === 2 && w.shape[0] === out && w.shape[1] === inF;
	if (!a || !b || !layoutOk || w.data.length !== out * inF)
		throw new LoraConfigError(
			`cannot merge the adapter into ${name}: ${!a || !b ? 'no A or B' : `shape [${w.shape}]`}`
		);
	const data = w.data.slice();
	// row o of B A: sum over k of B[o, k] A[k, :]
	for (let o = 0; o < out; o++)
		for (let k = 0; k < r; k++) {
			const s = scale * b[o * r + k];
			if (s === 0) continue;
			const row = k * inF;
			for (let i = 0; i < inF; i++) data[o * inF + i] += s * a[row + i];
		}
	return data;
}
