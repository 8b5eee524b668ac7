/**
 * @file How many sequences decode together by default: all of a call's, up to as many as
 * the KV cache takes within AUTO_KV_BYTES (64 to 1024), so hundreds of short games decode in
 * one batch, not in rounds (each round is a prefill and a decode loop with their GPU waits).
 */
import { kvCacheBufferBytes, kvCacheBytes } from '../transformer/kv-cache';
import type { ModelConfig } from '../types';

/** The default batch's bounds (autoBatch). */
export const MIN_AUTO_BATCH = 64;
const AUTO_MAX_BATCH = 1024;
/** The KV cache a default batch may take (f32 k and v of every layer). */
const AUTO_KV_BYTES = 1 << 30;
/** Cache slots per sequence are allocated in multiples of this, so calls of similar
 * lengths share one cache and one recorded step. */
export const SLOT_GRANULE = 256;

/**
 * The default batch for prompts needing `slots` cache slots each: all of them up to
 * AUTO_MAX_BATCH, while the KV cache stays within AUTO_KV_BYTES and its buffers within the
 * device's binding limit; never under MIN_AUTO_BATCH (the memory check then says what does
 * not fit).
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
	return Math.max(MIN_AUTO_BATCH, Math.min(prompts, fit));
}
