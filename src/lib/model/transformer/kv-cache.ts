/**
 * @file The key/value cache of a generation: per layer, k and v [B, S, Hkv, D] f32
 * (post-RoPE keys, as attention reads them), S slots per sequence. Slot t of sequence b
 * holds the key and value of its token at position t; each sequence fills its own slots
 * from 0 (prompts of different lengths need no padding inside the cache).
 *
 * Ownership: the KvCache owns its tensors; `release()` frees them.
 */
import type { Gpu } from '../../gpu/device';
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
