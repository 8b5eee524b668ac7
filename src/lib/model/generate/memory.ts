/**
 * @file GPU memory of a generation call, worked out before anything is allocated: the
 * model, the prefill of the largest prompt group, the KV cache (2 x L x [B, S, Hkv, D] f32)
 * and the decode step's buffers (one layer's activations, logits [B, V], the recorded
 * step's scratch). All are alive at once during the prefill, so the total is the peak.
 */
import type { Gpu } from '../../gpu/device';
import { decodeSplitPlan } from '../../gpu/kernels/decode-attention';
import { splitKCount } from '../../gpu/kernels/matmul';
import { sizeClass } from '../../gpu/pool';
import { decodeActSpecs } from '../transformer/decode-layer';
import { kvCacheBufferBytes, kvCacheBytes } from '../transformer/kv-cache';
import type { LoraConfig } from '../transformer/lora';
import { estimateModelMemory, type MemoryEstimate } from '../transformer/memory';
import type { WeightDtypes } from '../hf/weight-dtype';
import type { ModelConfig } from '../types';
import { projectionShape, PROJECTIONS } from '../hf/weight-spec';
import { specBytes, specList, type BatchDims } from '../transformer/workspace';

export interface GenerationMemoryOptions {
	/** Sequences decoded together. */
	B: number;
	/** KV-cache slots per sequence. */
	S: number;
	/** The largest prefill group (sequences x padded prompt length). */
	prefill: BatchDims;
	lora?: LoraConfig;
	/** Rows per chunk of the LM head (weights.ts). */
	weightChunkRows: number;
	/** The dtype each weight was uploaded in (ModelWeights.dtypes): f16 ones count 2 bytes. */
	weightDtype?: WeightDtypes;
	/** A copy of the projections with the adapter merged in (merged-lora.ts), bytes. */
	mergedLoraBytes?: number;
}

/** Split-K partial sums of c [m, n] = a [m, k] b^T, as matmul would make them. */
function splitKBytes(gpu: Gpu, m: number, n: number, k: number): number {
	const s = splitKCount(gpu, m, n, k);
	return s > 1 ? sizeClass(s * m * n * 4) : 0;
}

/** The itemised estimate of one generation call. */
export function estimateGenerationMemory(
	gpu: Gpu,
	config: ModelConfig,
	o: GenerationMemoryOptions
): MemoryEstimate {
	const { B, S } = o;
	const limits = gpu.limits;
	const common = {
		lora: o.lora,
		limits,
		weightChunkRows: o.weightChunkRows,
		weightDtype: o.weightDtype
	};
	const model = estimateModelMemory(config, common);
	const withPrefill = estimateModelMemory(config, { ...common, batch: o.prefill, mode: 'score' });
	const lines = [
		...model.lines,
		...withPrefill.lines
			.slice(model.lines.length)
			.map((l) => ({ ...l, what: `prefill ${o.prefill.B} x ${o.prefill.T}: ${l.what}` }))
	];

	if (o.mergedLoraBytes)
		lines.push({
			what: 'the projections with the adapter merged in (f32 copies)',
			bytes: o.mergedLoraBytes,
			largestBuffer: 0
		});
	lines.push({
		what: `KV cache (${config.numLayers} layers x k, v [${B}, ${S}, ${config.numKvHeads}, ${config.headDim}] f32)`,
		bytes: kvCacheBytes(config, B, S),
		largestBuffer: kvCacheBufferBytes(config, B, S)
	});

	const V = config.vocabSize;
	const C = config.hiddenSize;
	const chunked = V > o.weightChunkRows;
	// merged: the decode step applies no adapter (no x A^T, no LoRA products)
	const appliedRank = o.mergedLoraBytes ? 0 : (o.lora?.rank ?? 0);
	const acts = specList(decodeActSpecs(config, B, appliedRank)).map(specBytes);
	// The stream, final norm and its rstd, logits (and one chunk's), per-row sampling
	// parameters and results, positions, and the two readback buffers.
	const step = [B * C * 4, B * C * 4, B * 4, B * V * 4, chunked ? B * o.weightChunkRows * 4 : 0];
	const perRow = 9 * B * 4;
	lines.push({
		what: `decode step (${B} tokens: one layer's activations, logits [${B}, ${V}])`,
		bytes: [...acts, ...step].reduce((a, b) => a + b, 0) + perRow,
		largestBuffer: Math.max(...acts, ...step)
	});

	// Recorded scratch: one layer's (reused by every layer) plus the head's.
	const targets = new Set(appliedRank ? (o.lora?.targetModules ?? []) : []);
	const r = appliedRank;
	let scratch = 0;
	for (const name of PROJECTIONS) {
		const [out, inF] = projectionShape(config, name);
		scratch += splitKBytes(gpu, B, out, inF);
		if (targets.has(name)) scratch += splitKBytes(gpu, B, r, inF) + splitKBytes(gpu, B, out, r);
	}
	const { splits } = decodeSplitPlan(B, config.numKvHeads, S);
	const rows = B * config.numHeads * splits;
	scratch += sizeClass(rows * config.headDim * 4) + sizeClass(rows * 8);
	for (let v0 = 0; v0 < V; v0 += o.weightChunkRows)
		scratch += splitKBytes(gpu, B, Math.min(o.weightChunkRows, V - v0), C);
	lines.push({
		what: 'decode step scratch (split-K partial sums, attention partial states)',
		bytes: scratch,
		largestBuffer: 0
	});
	return { lines, totalBytes: lines.reduce((s, l) => s + l.bytes, 0) };
}
