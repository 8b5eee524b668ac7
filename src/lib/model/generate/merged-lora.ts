/**
 * @file The weights a Generator decodes with. A rollout's adapter does not move until the
 * next update, so where it is cheap the adapter is merged into a copy of the projections it
 * targets, W' = W + (alpha / r) B A (f32): every prefill and decode product is then the plain
 * one, without LoRA's two more (half a tiled decode step's dispatches). The copy is made
 * again, in place, when the adapter's version moves (an optimizer update, a write), so a
 * recorded decode step that binds it stays valid. Only f32 projections are merged (an f16
 * copy would round the adapter's small term away) and only up to MERGE_MAX_BYTES; otherwise
 * the live adapter is applied as before.
 */
import { run } from '../../gpu/kernel';
import { matmul } from '../../gpu/kernels/matmul';
import { createTensor, type Tensor } from '../../gpu/tensor';
import type { LayerWeights } from '../hf/weights';
import type { LoraParameters } from '../transformer/lora';
import type { TransformerModel } from '../transformer/transformer';
import { MERGE_MAX_BYTES, mergedCopyBytes } from './batch-size';

/** Per-layer weights, and the adapter to apply on top of them (none when merged in). */
export interface GenerationWeights {
	readonly layers: readonly LayerWeights[];
	readonly lora: LoraParameters | undefined;
}

/** Bytes of the merged copy `model` would need, or undefined when it cannot be merged. */
export function mergedLoraBytes(model: TransformerModel): number | undefined {
	const lora = model.lora;
	if (!lora) return undefined;
	const weights = lora.modules.map((m) => model.weights.layers[m.layer].proj[m.module]);
	if (weights.some((w) => w.dtype !== 'f32')) return undefined;
	return mergedCopyBytes(weights.map((w) => [w.shape[0], w.shape[1]] as const));
}

/** The adapter merged into copies of its projections, kept in step with its version. */
export class MergedLora implements GenerationWeights {
	readonly layers: LayerWeights[];
	readonly lora = undefined;
	readonly bytes: number;
	readonly #model: TransformerModel;
	readonly #adapter: LoraParameters;
	readonly #copies: { base: Tensor; merged: Tensor; a: Tensor; b: Tensor }[] = [];
	/** The adapter version the copies hold (-1: none yet). */
	#version = -1;

	/** Undefined when the model has no adapter, a targeted weight is not f32, or the copy
	 * would pass `maxBytes`. */
	static create(model: TransformerModel, maxBytes = MERGE_MAX_BYTES): MergedLora | undefined {
		const bytes = mergedLoraBytes(model);
		if (bytes === undefined || bytes > maxBytes) return undefined;
		return new MergedLora(model, bytes);
	}

	private constructor(model: TransformerModel, bytes: number) {
		this.#model = model;
		this.#adapter = model.lora!;
		this.bytes = bytes;
		this.layers = model.weights.layers.map((l) => ({ ...l, proj: { ...l.proj } }));
		try {
			for (const m of this.#adapter.modules) {
				const base = model.weights.layers[m.layer].proj[m.module];
				const merged = createTensor(model.gpu, base.shape, 'f32');
				this.#copies.push({ base, merged, a: m.a, b: m.b });
				this.layers[m.layer].proj[m.module] = merged;
			}
		} catch (error) {
			this.release();
			throw error;
		}
	}

	/** Whether the copies hold the adapter as it is now. */
	get current(): boolean {
		return this.#adapter.version === this.#version;
	}

	/** Makes the copies hold the adapter as it is now. */
	async sync(): Promise<void> {
		const version = this.#adapter.version;
		const scale = this.#adapter.scale;
		await run(this.#model.gpu, (rec) => {
			for (const c of this.#copies) {
				rec.copy(c.base.buffer, 0, c.merged.buffer, 0, c.base.size * 4);
				// W' [out, in] += scale * B [out, r] A [r, in]
				matmul(rec, { a: c.b, b: c.a, c: c.merged, alpha: scale, beta: 1 });
			}
		});
		this.#version = version;
	}

	release(): void {
		for (const c of this.#copies.splice(0)) c.merged.release();
		this.#version = -1;
	}
}
