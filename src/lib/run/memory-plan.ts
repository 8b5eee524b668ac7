/**
 * @file The GPU memory a run will need, from the base model's config and the recipe, before
 * anything downloads: the weights (f16 where published in 16 bits), LoRA with its Adam
 * state, the update's largest micro-batch (recompute: what the trainer falls back to), and
 * the KV cache of the smallest decode batch. Weights and the update's buffers exist
 * together; the decode's KV cache comes and goes beside the weights. The page shows it
 * and checks it against the device's buffer limits and the budget a visitor set.
 */
import {
	estimateModelMemory,
	fitsModelMemory,
	overBuffer,
	type DeviceLimits,
	type MemoryEstimate
} from '../model/transformer/memory';
import { kvCacheBufferBytes, kvCacheBytes } from '../model/transformer/kv-cache';
import { resolveLoraConfig } from '../model/transformer/lora';
import type { MemoryLine } from '../model/errors';
import type { ModelConfig } from '../model/types';
import type { Recipe } from './recipe';

export interface RunMemoryPlan {
	/** Weights and LoRA state, the update's micro-batch, and a decode batch's KV cache. */
	estimate: MemoryEstimate;
	/** Lines with one buffer over the device's per-buffer limit. */
	overBuffers: MemoryLine[];
	/** Whether it fits the limits and (when given) the budget. */
	fits: boolean;
}

/** Sequences the smallest decode batch holds (a game or two decoding at once). */
const DECODE_FLOOR = 2;

export function planRunMemory(
	config: ModelConfig,
	recipe: Pick<Recipe, 'lora' | 'grpo' | 'maxContext'>,
	limits: DeviceLimits,
	budgetBytes?: number
): RunMemoryPlan {
	const T = Math.min(recipe.maxContext, config.maxPositionEmbeddings);
	const B = Math.max(1, Math.floor(recipe.grpo.tokenBudget / T));
	const lora = resolveLoraConfig(recipe.lora);
	const update = estimateModelMemory(config, {
		lora,
		batch: { B, T },
		mode: 'train',
		limits,
		weightDtype: 'auto'
	});
	const kv: MemoryLine = {
		what: `KV cache of ${DECODE_FLOOR} games decoding (${T} tokens each)`,
		bytes: kvCacheBytes(config, DECODE_FLOOR, T),
		largestBuffer: kvCacheBufferBytes(config, DECODE_FLOOR, T)
	};
	const lines = [...update.lines, kv];
	const estimate = { lines, totalBytes: update.totalBytes + kv.bytes };
	return {
		estimate,
		overBuffers: overBuffer(estimate, limits).over,
		fits: fitsModelMemory(estimate, limits, budgetBytes)
	};
}
