/**
 * @file GPU memory a model needs, from its config before anything is allocated: weights
 * (f32, or f16 per weight-dtype.ts), LoRA state, one call's activations (workspace.ts) at
 * the pool's size classes, and the kernels' scratch (scratch.ts). Checks every buffer
 * against the device's limits and the total against the caller's budget (WebGPU reports
 * none): ModelTooLargeError with the numbers. Without per-tensor dtypes, weights count f32.
 */
import { DEFAULT_LOGITS_BUDGET_BYTES } from '../../gpu/kernels/logsoftmax';
import { formatBytes } from '../../gpu/tensor';
import { ModelTooLargeError, type MemoryLine } from '../errors';
import { loraBytes, type LoraConfig } from './lora';
import type { ModelConfig } from '../types';
import {
	backwardSpecs,
	headSpecs,
	inputSpecs,
	layerSpecs,
	loraActSpecs,
	pooledBytes,
	specList,
	streamSpecs,
	layerStateSpecs,
	type BatchDims,
	type Mode,
	type TensorSpec
} from './workspace';
import { estimateScratch, type ScratchLimits } from './scratch';
import { projectionShape, weightSpecs } from '../hf/weight-spec';
import {
	planWeightDtypes,
	type GpuWeightDType,
	type WeightDtypePolicy,
	type WeightDtypes
} from '../hf/weight-dtype';

/** The per-buffer limits, and (optionally) the workgroup limits matmul's tile choice reads. */
export type DeviceLimits = ScratchLimits;

export interface MemoryEstimate {
	lines: MemoryLine[];
	totalBytes: number;
}

export interface MemoryEstimateOptions {
	/** The resolved LoRA config, when the model carries adapters. */
	lora?: LoraConfig;
	/** A batch whose activations to add; omitted: weights and LoRA state only. */
	batch?: BatchDims;
	mode?: Mode;
	/** Training keeps every layer's activations (no recompute in the backward). */
	keepActivations?: boolean;
	/** The device's limits: the embedding's chunk size depends on them. */
	limits?: DeviceLimits;
	/** Rows per chunk of the embedding / lm_head when known (a model's maxChunkBytes);
	 * default: as many as the limits allow. */
	weightChunkRows?: number;
	/** How the weights are kept: a policy over config.dtype, or each tensor's dtype (see
	 * the file comment); default: all f32. */
	weightDtype?: WeightDtypePolicy | WeightDtypes;
}

const BYTES: Record<GpuWeightDType, number> = { f32: 4, f16: 2 };

/** A line of pooled buffers (each rounded to its size class). */
function line(what: string, specs: TensorSpec[]): MemoryLine {
	const sizes = specs.map(pooledBytes);
	return {
		what,
		bytes: sizes.reduce((a, b) => a + b, 0),
		largestBuffer: Math.max(0, ...sizes)
	};
}

/** The itemised estimate; see the file comment. */
export function estimateModelMemory(
	config: ModelConfig,
	options: MemoryEstimateOptions = {}
): MemoryEstimate {
	const lines: MemoryLine[] = [];
	const { vocabSize: V, hiddenSize: C } = config;
	const limit = options.limits
		? Math.min(options.limits.maxStorageBufferBindingSize, options.limits.maxBufferSize)
		: Infinity;
	const given = options.weightDtype ?? 'f32';
	const dtypes = typeof given === 'string' ? planWeightDtypes(config, given) : given;
	const dtypeOf = (name: string): GpuWeightDType => dtypes[name] ?? 'f32';
	// The embedding and lm_head are chunked: their largest buffer is one chunk.
	const rowsOf = (name: string) =>
		Math.max(1, Math.min(V, Math.floor(limit / (BYTES[dtypeOf(name)] * C))));
	const headName = config.tieWordEmbeddings ? 'model.embed_tokens.weight' : 'lm_head.weight';
	const chunkRows = rowsOf(headName);
	const vocabNames = new Set(['model.embed_tokens.weight', 'lm_head.weight']);
	const weights: MemoryLine = { what: '', bytes: 0, largestBuffer: 0 };
	const count = { f32: 0, f16: 0 };
	for (const s of weightSpecs(config)) {
		const bytes = BYTES[dtypeOf(s.name)];
		count[dtypeOf(s.name)]++;
		weights.bytes += bytes * s.shape.reduce((a, b) => a * b, 1);
		const largest = vocabNames.has(s.name)
			? bytes * rowsOf(s.name) * C
			: bytes * s.shape.reduce((a, b) => a * b, 1);
		weights.largestBuffer = Math.max(weights.largestBuffer, largest);
	}
	weights.what = count.f16
		? `weights (${count.f16} tensors f16, ${count.f32} f32)`
		: 'weights (f32)';
	lines.push(weights);

	if (options.lora) {
		const r = options.lora.rank;
		const widest = Math.max(
			...options.lora.targetModules.map((m) => Math.max(...projectionShape(config, m)))
		);
		lines.push({
			what: `LoRA r=${r} (A, B, gradients, AdamW m and v)`,
			bytes: loraBytes(config, options.lora),
			largestBuffer: 4 * r * widest
		});
	}

	const batch = options.batch;
	if (batch) {
		const mode = options.mode ?? 'score';
		const N = batch.B * batch.T;
		lines.push(line('inputs (ids, lengths, positions, targets)', specList(inputSpecs(batch))));
		lines.push(
			line(
				mode === 'train'
					? `residual-stream checkpoints (${config.numLayers + 1} x [${N}, ${C}])`
					: 'residual stream',
				streamSpecs(config, batch, mode)
			)
		);
		const layerActs = specList(layerSpecs(config, batch));
		const loraActs = specList(loraActSpecs(batch, options.lora));
		const keep = mode === 'train' && !!options.keepActivations;
		if (keep) {
			const one = line('', layerStateSpecs(config, batch, options.lora, true));
			lines.push({
				what: `every layer\u2019s activations, kept for the backward (${config.numLayers} x ${formatBytes(one.bytes)})`,
				bytes: config.numLayers * one.bytes,
				largestBuffer: one.largestBuffer
			});
		} else {
			lines.push(line('one layer\u2019s activations', layerActs));
			if (loraActs.length) lines.push(line('LoRA activations (x A^T)', loraActs));
		}
		lines.push(line('head (final norm, log-probs)', specList(headSpecs(config, batch))));
		if (mode === 'train')
			lines.push(line('one layer\u2019s backward', specList(backwardSpecs(config, batch))));
		// logsoftmax.ts: one chunk of [N, rows] logits within its budget; scratch.ts adds the
		// rest of what the kernels make per recorder, for the recorders alive at once.
		const logitRows = Math.max(
			1,
			Math.min(V, Math.floor(Math.min(DEFAULT_LOGITS_BUDGET_BYTES, limit) / (4 * N)))
		);
		const scratch = estimateScratch({
			config,
			B: batch.B,
			T: batch.T,
			mode,
			recompute: !keep,
			lora: options.lora,
			limits: options.limits,
			logitRows,
			weightChunkRows: options.weightChunkRows ?? chunkRows,
			headWeightBytes: BYTES[dtypeOf(headName)]
		});
		lines.push({
			what:
				'scratch: logits chunk, split-K partial sums, LoRA dx A^T, attention row stats, ' +
				'uniform pages (reused from layer to layer)',
			bytes: scratch.bytes,
			largestBuffer: scratch.largestBuffer
		});
	}
	return { lines, totalBytes: lines.reduce((s, l) => s + l.bytes, 0) };
}

/** The estimate as text, one line per item. */
export function describeEstimate(e: MemoryEstimate): string {
	return e.lines.map((l) => `${l.what}: ${formatBytes(l.bytes)}`).join('; ');
}

/** The device's per-buffer limit, and the estimate's lines with a buffer over it. */
export function overBuffer(estimate: MemoryEstimate, limits: DeviceLimits) {
	const perBuffer = Math.min(limits.maxStorageBufferBindingSize, limits.maxBufferSize);
	return { perBuffer, over: estimate.lines.filter((l) => l.largestBuffer > perBuffer) };
}

/** Whether checkModelMemory would let the estimate through. */
export function fitsModelMemory(
	estimate: MemoryEstimate,
	limits: DeviceLimits,
	budgetBytes: number | undefined
): boolean {
	return (
		overBuffer(estimate, limits).over.length === 0 &&
		(budgetBytes === undefined || estimate.totalBytes <= budgetBytes)
	);
}

/**
 * Throws ModelTooLargeError when one buffer of the estimate exceeds the device's
 * per-buffer limits, or the total exceeds `budgetBytes` (when given).
 */
export function checkModelMemory(
	estimate: MemoryEstimate,
	limits: DeviceLimits,
	budgetBytes: number | undefined,
	what: string
): void {
	const { perBuffer, over } = overBuffer(estimate, limits);
	if (over.length) {
		throw new ModelTooLargeError(
			`${what} needs single buffers larger than this device allows (` +
				over.map((l) => `${l.what}: ${formatBytes(l.largestBuffer)}`).join('; ') +
				`; the limit is ${formatBytes(perBuffer)}, maxStorageBufferBindingSize / maxBufferSize). ` +
				'Use a shorter batch (fewer tokens) or a smaller model.',
			estimate.totalBytes,
			budgetBytes ?? Infinity,
			estimate.lines
		);
	}
	if (budgetBytes !== undefined && estimate.totalBytes > budgetBytes) {
		throw new ModelTooLargeError(
			`${what} needs ${formatBytes(estimate.totalBytes)} of GPU memory, over the budget of ` +
				`${formatBytes(budgetBytes)} (${describeEstimate(estimate)}). Use fewer or shorter ` +
				'sequences per batch, a smaller LoRA rank, or a smaller model; or raise the budget ' +
				'if the GPU has the memory.',
			estimate.totalBytes,
			budgetBytes,
			estimate.lines
		);
	}
}
