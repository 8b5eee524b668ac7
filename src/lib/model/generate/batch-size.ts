/**
 * @file How many sequences decode together by default: all of a call's, up to as many as
 * the KV cache takes within AUTO_KV_BYTES (at most 1024), so hundreds of short games decode
 * in one batch, not in rounds (each round is a prefill and a decode loop with their GPU
 * waits), and a pretrained model's long contexts decode a few at a time rather than not at all;
 * the prefix store's cap, how many padded tokens a prefill group takes (prefill.ts), and the
 * adapter's merged copy at most (merged-lora.ts).
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

/** The adapter merged into f32 copies of the projections it targets (merged-lora.ts) at
 * most: the bundled models' copies are ~20 MiB; a Hub model's f16 weights are never merged. */
export const MERGE_MAX_BYTES = 64 * 2 ** 20;

/** Bytes of the merged copy: each targeted projection [out, in] in f32. */
export const mergedCopyBytes = (shapes: readonly (readonly [number, number])[]): number =>
	shapes.reduce((n, [out, inF]) => n + out * inF * 4, 0);

/** `n` cache slots rounded up to whole SLOT_GRANULEs. */
export const roundSlots = (n: number): number => Math.ceil(n / SLOT_GRANULE) * SLOT_GRANULE;

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
	const S = roundSlots(slots);
	const byBytes = Math.floor(AUTO_KV_BYTES / kvCacheBytes(config, 1, S));
	const byBuffer = Math.floor(perBuffer / kvCacheBufferBytes(config, 1, S));
	const fit = Math.min(byBytes, byBuffer, AUTO_MAX_BATCH);
	return Math.max(1, Math.min(prompts, fit));
}

/** Padded tokens per prefill group for Qwen2.5-0.5B's width (intermediate 4864): one
 * layer's gate, up and SwiGLU output are then 3 x 4096 x 4864 f32, 240 MB. */
const PREFILL_TOKENS = 4096;
const PREFILL_REFERENCE_WIDTH = 4864;
/** The most padded tokens of one prefill group for any model. */
const PREFILL_MAX_TOKENS = 32768;

/** Padded tokens per prefill group: PREFILL_TOKENS scaled to keep the widest activations
 * (3 x tokens x intermediate f32) at the reference model's bytes, from 4096 to 32768. */
export function prefillTokenLimit(config: ModelConfig): number {
	const scaled = Math.floor((PREFILL_TOKENS * PREFILL_REFERENCE_WIDTH) / config.intermediateSize);
	return Math.max(PREFILL_TOKENS, Math.min(PREFILL_MAX_TOKENS, scaled));
}
