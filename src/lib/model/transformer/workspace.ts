/**
 * @file The GPU buffers one model call needs for a batch (B, T), listed by shape in one
 * place so allocation and the memory estimate agree. Token-major [N, width], N = B * T (b
 * outer), so q is [B, T, Hq, D]. Groups: inputs (u32), stream (training keeps (L + 1) x
 * [N, C] layer inputs as checkpoints), layer (one set, or one per layer when activations
 * are kept), backward, head.
 */
import { sizeClass, type BufferPool } from '../../gpu/pool';
import { BYTES_PER_ELEMENT, paddedByteLength, type DType, type Tensor } from '../../gpu/tensor';
import type { LoraConfig } from './lora';
import type { ModelConfig } from '../types';
import type { ProjectionName } from '../hf/weight-spec';

export interface TensorSpec {
	shape: number[];
	dtype: DType;
}
type Specs = Record<string, TensorSpec | undefined>;
export type Allocated<S extends Specs> = {
	[K in keyof S]: S[K] extends TensorSpec ? Tensor : Tensor | undefined;
};

const f32 = (...shape: number[]): TensorSpec => ({ shape, dtype: 'f32' });
const u32 = (...shape: number[]): TensorSpec => ({ shape, dtype: 'u32' });

export type Mode = 'score' | 'train';

export interface BatchDims {
	B: number;
	T: number;
}

function sizes(config: ModelConfig, { B, T }: BatchDims) {
	return {
		N: B * T,
		C: config.hiddenSize,
		I: config.intermediateSize,
		qDim: config.numHeads * config.headDim,
		kvDim: config.numKvHeads * config.headDim,
		Hq: config.numHeads,
		Hkv: config.numKvHeads
	};
}

export function inputSpecs({ B, T }: BatchDims) {
	return { ids: u32(B * T), lengths: u32(B), positions: u32(T), targets: u32(B * T) };
}

export function layerSpecs(config: ModelConfig, dims: BatchDims) {
	const { N, C, I, qDim, kvDim, Hq, Hkv } = sizes(config, dims);
	const qk = config.qkNorm;
	return {
		h1: f32(N, C),
		rstd1: f32(N),
		/** After q_norm (Qwen3) and RoPE: what attention reads. */
		q: f32(N, qDim),
		k: f32(N, kvDim),
		v: f32(N, kvDim),
		/** Qwen3: the projections' outputs before q_norm / k_norm (their backward reads them). */
		qPre: qk ? f32(N, qDim) : undefined,
		kPre: qk ? f32(N, kvDim) : undefined,
		rstdQ: qk ? f32(N * Hq) : undefined,
		rstdK: qk ? f32(N * Hkv) : undefined,
		att: f32(N, qDim),
		lse: f32(dims.B, Hq, dims.T),
		h2: f32(N, C),
		rstd2: f32(N),
		gate: f32(N, I),
		up: f32(N, I),
		m: f32(N, I)
	};
}

/** The stream after attention x2 [N, C]: the backward's post-attention norm reads it. */
export function x2Spec(config: ModelConfig, dims: BatchDims): TensorSpec {
	return f32(dims.B * dims.T, config.hiddenSize);
}

/** x A^T [N, r] of each targeted projection (the LoRA backward reads it). */
export function loraActSpecs(
	dims: BatchDims,
	lora: LoraConfig | undefined
): Partial<Record<ProjectionName, TensorSpec>> {
	const out: Partial<Record<ProjectionName, TensorSpec>> = {};
	for (const m of lora?.targetModules ?? []) out[m] = f32(dims.B * dims.T, lora!.rank);
	return out;
}

/** One layer's state for the backward: its activations, LoRA's x A^T, and x2 when the
 * activations are kept (in that case there is one such set per layer). */
export function layerStateSpecs(
	config: ModelConfig,
	dims: BatchDims,
	lora: LoraConfig | undefined,
	kept: boolean
): TensorSpec[] {
	return [
		...specList(layerSpecs(config, dims)),
		...specList(loraActSpecs(dims, lora)),
		...(kept ? [x2Spec(config, dims)] : [])
	];
}

export function backwardSpecs(config: ModelConfig, dims: BatchDims) {
	const { N, C, I, qDim, kvDim } = sizes(config, dims);
	const qk = config.qkNorm;
	return {
		/** The layer's input recomputed into x2 = x + attention. */
		x2: f32(N, C),
		/** dLoss / d(residual stream), carried from layer to layer. */
		dS: f32(N, C),
		dh: f32(N, C),
		tmp: f32(N, C),
		dm: f32(N, I),
		dgate: f32(N, I),
		dup: f32(N, I),
		datt: f32(N, qDim),
		dq: f32(N, qDim),
		dk: f32(N, kvDim),
		dv: f32(N, kvDim),
		dqPre: qk ? f32(N, qDim) : undefined,
		dkPre: qk ? f32(N, kvDim) : undefined,
		g: f32(N)
	};
}

export function headSpecs(config: ModelConfig, { B, T }: BatchDims) {
	const N = B * T;
	return { hf: f32(N, config.hiddenSize), rstdF: f32(N), logprobs: f32(N), lseF: f32(N) };
}

/** Checkpoints: (L + 1) x [N, C] for training, one stream for scoring. */
export function streamSpecs(config: ModelConfig, { B, T }: BatchDims, mode: Mode): TensorSpec[] {
	const n = mode === 'train' ? config.numLayers + 1 : 1;
	return Array.from({ length: n }, () => f32(B * T, config.hiddenSize));
}

/** Every buffer one call on `dims` takes from the pool (`keep`: a layer state per layer). */
export function callSpecs(
	config: ModelConfig,
	dims: BatchDims,
	lora: LoraConfig | undefined,
	mode: Mode,
	keep: boolean
): TensorSpec[] {
	const layerState = layerStateSpecs(config, dims, lora, keep);
	return [
		...specList(inputSpecs(dims)),
		...streamSpecs(config, dims, mode),
		...Array.from({ length: keep ? config.numLayers : 1 }, () => layerState).flat(),
		...specList(headSpecs(config, dims)),
		...(mode === 'train' ? specList(backwardSpecs(config, dims)) : [])
	];
}

/** Bytes a spec takes from the pool (its size class). */
export function pooledBytes(spec: TensorSpec): number {
	return sizeClass(paddedByteLength(spec.shape, spec.dtype));
}

/** Exact bytes of a spec's elements. */
export function specBytes(spec: TensorSpec): number {
	return spec.shape.reduce((a, b) => a * b, 1) * BYTES_PER_ELEMENT[spec.dtype];
}

export function specList(specs: Specs): TensorSpec[] {
	return Object.values(specs).filter((s): s is TensorSpec => s !== undefined);
}

/** Allocates every spec from `pool`; on failure releases what it took. */
export function allocate<S extends Specs>(pool: BufferPool, specs: S): Allocated<S> {
	const out: Record<string, Tensor | undefined> = {};
	try {
		for (const [key, spec] of Object.entries(specs))
			out[key] = spec ? pool.tensor(spec.shape, spec.dtype) : undefined;
	} catch (error) {
		releaseAll(out);
		throw error;
	}
	return out as Allocated<S>;
}

export function releaseAll(tensors: Record<string, Tensor | undefined> | readonly Tensor[]): void {
	for (const t of Object.values(tensors)) t?.release();
}
