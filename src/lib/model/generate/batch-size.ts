/**
 * @file How many sequences decode together by default: all of a call's, up to as many as
 * the KV cache takes within AUTO_KV_BYTES (at most 1024), so hundreds of short games decode
 * in one batch, not in rounds (each round is a prefill and a decode loop with their GPU
 * waits), and a pretrained model's long contexts decode a few at a time rather than not at all.
 */
import { kvCacheBufferBytes, kvCacheBytes } from '../transformer/kv-cache';
import type { ModelConfig } from '../types';

const AUTO_MAX_BATCH = 1024;
/** The KV cache a default batch (and a roomy session, session-keeper.ts) may take (f32 k
 * and v of every layer). */
export const AUTO_KV_BYTES = 1 << 30;
/** The KV cache a prefix store (prefix-store.ts) may take: with a default batch's, what a
 * generator keeps beside the model at most, so a run's memory is known before it starts
 * (run/memory-plan.ts) on devices that do not say how much they have. */
export const STORE_KV_BYTES = 2 * AUTO_KV_BYTES;
/** Cache slots per sequence are allocated in multiples of this, so calls of similar
 * lengths share one cache and one recorded step. */
export const SLOT_GRANULE = 256;

/**
 * The default batch for prompts needing `slots` cache slots each: all of them up to
 * AUTO_MAX_BATCH, while the KV cache stays within AUTO_KV_BYTES and its buffers within the
 * device's binding limit; at least one (the memory check then says whether one fits).
 */
export function autoBatch(
	config: ModelConfig,
	limits: { maxStorageBufferBindingSize: number; maxBufferSize: number },
	prompts: number,
	slots: number
): number {
	const perBuffer = Math.min(limits.maxStorageBufferBindingSize, limits.maxBufferSize);
	const S = Math.ceil(slots / SLOT_GRANULE) * SLOT_GRANULE;
	const byBytes = Math.floor(AUTO_KV_BYTES / kvCacheBytes(config, 1, S));
	const byBuffer = Math.floor(perBuffer / kvCacheBufferBytes(config, 1, S));
	const fit = Math.min(byBytes, byBuffer, AUTO_MAX_BATCH);
	return Math.max(1, Math.min(prompts, fit));
}
