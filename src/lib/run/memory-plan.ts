/**
 * @file The GPU memory a run will need, from the base model's config and the recipe, before
 * anything downloads: the weights (f16 where published in 16 bits), LoRA with its Adam
 * state, the update's largest micro-batch (recompute: what the trainer falls back to), the
 * adapter merged into f32 projections for the games (where they are f32), and the KV cache
 * of the smallest decode batch. Weights and the update's buffers exist together; the
 * decode's KV cache comes and goes beside the weights. The page shows it and checks it
 * against the device's buffer limits and the budget a visitor set.
 * Where memory allows, the generator decodes the step's games in one batch and keeps their
 * keys and values for the next turn (prefix store): `caches` are those KV caches at the
 * recipe's games per step and its context, each within its cap (generate/batch-size.ts),
 * and a prefill's activations (allocated while the update's stay pooled for the next step);
 * `upToBytes` the most the run uses with them.
 */
import {
	estimateModelMemory,
	fitsModelMemory,
	overBuffer,
	type DeviceLimits,
	type MemoryEstimate
} from '../model/transformer/memory';
import { kvCacheBufferBytes, kvCacheBytes } from '../model/transformer/kv-cache';
import {
	autoBatch,
	MERGE_MAX_BYTES,
	mergedCopyBytes,
	prefillTokenLimit,
	roundSlots,
	STORE_KV_BYTES
} from '../model/generate/batch-size';
import { resolveLoraConfig, type LoraConfig } from '../model/transformer/lora';
import { planWeightDtypes } from '../model/hf/weight-dtype';
import { projectionPath, projectionShape } from '../model/hf/weight-spec';

import type { MemoryLine } from '../model/errors';
import type { ModelConfig } from '../model/types';
import type { Recipe } from './recipe';

export interface RunMemoryPlan {
	/** What the run needs: weights and LoRA state, the update's micro-batch, and the
	 * smallest decode batch's KV cache. */
	estimate: MemoryEstimate;
	/** Where memory allows: the decode batch of the step's games, their prefix store, and a
	 * prefill's activations beside the update's pooled buffers. */
	caches: MemoryLine[];
	/** The most the run uses: the estimate with `caches` for its smallest decode batch. */
	upToBytes: number;
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
	const merged = mergedLine(config, lora);
	const lines = [...update.lines, ...(merged ? [merged] : []), kv];
	const estimate = {
		lines,
		totalBytes: update.totalBytes + (merged?.bytes ?? 0) + kv.bytes
	};
	const games = recipe.grpo.groups * recipe.grpo.groupSize;
	const caches = [...cacheLines(config, games, T, limits), prefillLine(config, lora, T, limits)];
	return {
		estimate,
		caches,
		upToBytes: update.totalBytes + caches.reduce((n, l) => n + l.bytes, 0),
		overBuffers: overBuffer(estimate, limits).over,
		fits: fitsModelMemory(estimate, limits, budgetBytes)
	};
}

/** The generator's copy of the projections with the adapter merged in (merged-lora.ts):
 * made where they are f32 (a checkpoint stored in f32) within MERGE_MAX_BYTES. */
function mergedLine(config: ModelConfig, lora: LoraConfig): MemoryLine | undefined {
	const dtypes = planWeightDtypes(config, 'auto');
	const targets = lora.targetModules;
	if (targets.some((name) => dtypes[`${projectionPath(0, name)}.weight`] !== 'f32'))
		return undefined;
	const one = mergedCopyBytes(targets.map((name) => projectionShape(config, name)));
	const bytes = one * config.numLayers;
	if (bytes > MERGE_MAX_BYTES) return undefined;
	return {
		what: 'the projections with the adapter merged in, for the games (f32 copies)',
		bytes,
		largestBuffer: Math.max(
			...targets.map((name) => mergedCopyBytes([projectionShape(config, name)]))
		)
	};
}

/** The generator's KV caches for `games` sequences of up to T tokens: the default decode
 * batch (autoBatch: within AUTO_KV_BYTES) and the prefix store (within STORE_KV_BYTES). */
function cacheLines(
	config: ModelConfig,
	games: number,
	T: number,
	limits: DeviceLimits
): MemoryLine[] {
	const S = roundSlots(T);
	const B = autoBatch(config, limits, games, S);
	const E = Math.min(games, Math.floor(STORE_KV_BYTES / kvCacheBytes(config, 1, S)));
	return [
		{
			what: `KV cache of ${B} games decoding at once (up to ${S} tokens each), not ${DECODE_FLOOR}`,
			bytes: kvCacheBytes(config, B, S),
			largestBuffer: kvCacheBufferBytes(config, B, S)
		},
		{
			what: `keys and values of ${E} games kept for their next turn (prefix store)`,
			bytes: kvCacheBytes(config, E, S),
			largestBuffer: kvCacheBufferBytes(config, E, S)
		}
	];
}

/** The activations of the largest group of prompts prefilled together (prefill.ts: up to
 * prefillTokenLimit tokens), made while the update's buffers stay pooled for the next step. */
function prefillLine(
	config: ModelConfig,
	lora: LoraConfig,
	T: number,
	limits: DeviceLimits
): MemoryLine {
	const tokens = prefillTokenLimit(config);
	const batch = { B: Math.max(1, Math.floor(tokens / T)), T: Math.min(T, tokens) };
	const common = { lora, limits, weightDtype: 'auto' as const };
	const model = estimateModelMemory(config, common);
	const withPrefill = estimateModelMemory(config, { ...common, batch, mode: 'score' });
	const extra = withPrefill.lines.slice(model.lines.length);
	return {
		what: `prompts prefilled together (${batch.B} x ${batch.T} tokens: their activations)`,
		bytes: withPrefill.totalBytes - model.totalBytes,
		largestBuffer: Math.max(0, ...extra.map((l) => l.largestBuffer))
	};
}
