/**
 * @file The key/value cache of a generation: per layer, k and v [B, S, Hkv, D] f32
 * (post-RoPE keys, as attention reads them), S slots per sequence. Slot t of sequence b
 * holds the key and value of its token at position t; each sequence fills its own slots
 * from 0 (prompts of different lengths need no padding inside the cache). copyCacheRows
 * moves rows between caches, or inside one.
 *
 * Ownership: the KvCache owns its tensors; `release()` frees them.
 */
import type { Gpu } from '../../gpu/device';
import { Recorder } from '../../gpu/kernel';
import {
	copyRowSpans,
	copyRowSpansWithin,
	uploadRowSpans,
	uploadRowSpansWithin,
	type RowSpan
} from '../../gpu/kernels/copy';
import type { BufferPool } from '../../gpu/pool';
import { createTensor, type Tensor } from '../../gpu/tensor';
import type { ModelConfig } from '../types';

/** Bytes of one layer's k (or v) cache: the largest single buffer. */
export function kvCacheBufferBytes(config: ModelConfig, B: number, S: number): number {
	return 4 * B * S * config.numKvHeads * config.headDim;
}

/** Bytes of the whole cache: 2 (k, v) x layers x [B, S, Hkv, D] f32. */
export function kvCacheBytes(config: ModelConfig, B: number, S: number): number {
	return 2 * config.numLayers * kvCacheBufferBytes(config, B, S);
}

export class KvCache {
	readonly k: Tensor<'f32'>[] = [];
	readonly v: Tensor<'f32'>[] = [];

	/** Allocates (zeroed) L x 2 tensors; frees what it made if one allocation fails. */
	constructor(
		gpu: Gpu,
		readonly config: ModelConfig,
		readonly B: number,
		readonly S: number
	) {
		const shape = [B, S, config.numKvHeads, config.headDim];
		try {
			for (let l = 0; l < config.numLayers; l++) {
				this.k.push(createTensor(gpu, shape, 'f32'));
				this.v.push(createTensor(gpu, shape, 'f32'));
			}
		} catch (error) {
			this.release();
			throw error;
		}
	}

	get bytes(): number {
		return kvCacheBytes(this.config, this.B, this.S);
	}

	release(): void {
		for (const t of [...this.k, ...this.v]) t.release();
	}
}

/** Copies row spans of every layer's k and v from `src` to `dst` (rows [B * S] each), or,
 * `dst` being `src`, inside it (no span may write a row a span reads): one submission,
 * queued before anything recorded later (so callers need not wait); the promise settles
 * when the GPU has run it. */
export function copyCacheRows(
	gpu: Gpu,
	pool: BufferPool,
	src: KvCache,
	dst: KvCache,
	spans: readonly RowSpan[]
): Promise<void> {
	if (!spans.length) return Promise.resolve();
	const width = src.config.numKvHeads * src.config.headDim;
	const within = src === dst;
	const list = within
		? uploadRowSpansWithin(gpu, spans, src.B * src.S)
		: uploadRowSpans(gpu, spans, src.B * src.S, dst.B * dst.S);
	try {
		const rec = new Recorder(gpu, pool);
		for (let l = 0; l < src.config.numLayers; l++)
			for (const [from, to] of [
				[src.k[l], dst.k[l]],
				[src.v[l], dst.v[l]]
			])
				if (within) copyRowSpansWithin(rec, { buffer: to, width, spans: list });
				else copyRowSpans(rec, { src: from, dst: to, width, spans: list });
		return rec.submit().finally(() => list.tensor.release());
	} catch (error) {
		list.tensor.release();
		throw error;
	}
}
