/**
 * @file A model's frozen weights on the GPU from a WeightSource: the embedding (and an
 * untied lm_head) as ChunkedMatrix, the rest as one Tensor each. Projections, embedding and
 * lm_head are f16 or f32 per `weightDtype` (weight-dtype.ts), uploaded as their bits;
 * norms and biases f32. The source is checked against the config first, and a failed
 * upload releases what it made. `dtypes` and `keptF32` say what each tensor got.
 */
import { ChunkedMatrix, uploadChunkedF16Bits, uploadChunkedMatrix } from '../../gpu/chunked';
import type { Gpu } from '../../gpu/device';
import { createTensor, uploadTensor, writeF16Bits, type Tensor } from '../../gpu/tensor';
import { WeightsMismatchError } from '../errors';
import type { ModelConfig, WeightDType, WeightSource } from '../types';
import {
	bf16BitsToF16,
	checkWeightDtypePolicy,
	f32ToF16,
	F16_MAX_RELATIVE_ERROR,
	plannedDtype,
	type F16Conversion,
	type GpuWeightDType,
	type WeightDtypePolicy,
	type WeightDtypes
} from './weight-dtype';
import { PROJECTIONS, projectionPath, projectionShape, type ProjectionName } from './weight-spec';
import { weightSpecs } from './weight-spec';

export interface LayerWeights {
	inputNorm: Tensor<'f32'>;
	postNorm: Tensor<'f32'>;
	/** nn.Linear weights [out, in], row-major; f32 or f16 (weight-dtype.ts). */
	proj: Record<ProjectionName, Tensor<GpuWeightDType>>;
	/** Biases [out] of the projections that have one (Qwen2's q/k/v). */
	bias: Partial<Record<ProjectionName, Tensor<'f32'>>>;
	/** Per-head RMSNorm weights [headDim] (Qwen3). */
	qNorm?: Tensor<'f32'>;
	kNorm?: Tensor<'f32'>;
}

/** A tensor stored as f16 or bf16 that 'auto' kept in f32: f16 would have erred by
 * `relativeError` (max |x - f16(x)| / max |x|, over F16_MAX_RELATIVE_ERROR). */
export interface KeptF32 {
	name: string;
	stored: WeightDType;
	relativeError: number;
}

export interface ModelWeights {
	/** [V, C], f32 or f16. */
	embed: ChunkedMatrix<GpuWeightDType>;
	/** [V, C]: the embedding itself when the config ties them. */
	lmHead: ChunkedMatrix<GpuWeightDType>;
	finalNorm: Tensor<'f32'>;
	layers: LayerWeights[];
	/** Bytes of GPU memory held (2 per element of f16 tensors, 4 of f32 ones). */
	bytes: number;
	/** The dtype each tensor is kept in, by checkpoint name (memory.ts counts from it). */
	dtypes: WeightDtypes;
	/** f16 / bf16 tensors that 'auto' kept in f32 (empty for real checkpoints so far). */
	keptF32: KeptF32[];
	release(): void;
}

export interface UploadWeightsOptions {
	/** Largest chunk of the embedding / lm_head in bytes (tests use it to force chunking);
	 * default: the device's binding limit. */
	maxChunkBytes?: number;
	/** Called after each tensor with the GPU bytes uploaded so far and the total (the total
	 * as planned from the stored dtypes; it grows if the check keeps a tensor in f32). */
	onProgress?(doneBytes: number, totalBytes: number): void;
	/** The dtype policy of the projections, embedding and lm_head (weight-dtype.ts);
	 * default 'auto'. */
	weightDtype?: WeightDtypePolicy;
}

/** Throws WeightsMismatchError unless `source` holds every tensor `config` needs, in shape. */
export function checkWeightSource(config: ModelConfig, source: WeightSource): void {
	const stored = new Map(source.list().map((t) => [t.name, t.shape]));
	const missing: string[] = [];
	const wrongShape: { name: string; expected: number[]; actual: number[] }[] = [];
	for (const spec of weightSpecs(config)) {
		const shape = stored.get(spec.name);
		if (!shape) missing.push(spec.name);
		else if (shape.length !== spec.shape.length || shape.some((d, i) => d !== spec.shape[i]))
			wrongShape.push({ name: spec.name, expected: spec.shape, actual: [...shape] });
	}
	if (missing.length || wrongShape.length) throw new WeightsMismatchError(missing, wrongShape);
}

/** Uploads every weight `config` needs from `source`; see the file comment. */
export async function uploadWeights(
	gpu: Gpu,
	config: ModelConfig,
	source: WeightSource,
	options: UploadWeightsOptions = {}
): Promise<ModelWeights> {
	checkWeightSource(config, source);
	const policy = checkWeightDtypePolicy(options.weightDtype ?? 'auto');
	const specs = weightSpecs(config);
	const names = new Set(specs.map((s) => s.name));
	const stored = new Map(source.list().map((t) => [t.name, t.dtype]));
	const storedOf = (name: string) => stored.get(name) ?? config.dtype;
	const bytesOf = (dtype: GpuWeightDType, size: number) => (dtype === 'f16' ? 2 : 4) * size;
	let total = specs.reduce(
		(s, w) =>
			s +
			bytesOf(
				plannedDtype(w.name, storedOf(w.name), policy),
				w.shape.reduce((a, b) => a * b, 1)
			),
		0
	);
	const owned: { release(): void }[] = [];
	const dtypes: Record<string, GpuWeightDType> = {};
	const keptF32: KeptF32[] = [];
	let done = 0;

	const checkSize = (name: string, size: number, length: number) => {
		// The reader disagrees with list(): the source is inconsistent.
		if (length !== size)
			throw new WeightsMismatchError([], [{ name, expected: [size], actual: [length] }]);
	};
	const readF32 = async (name: string, size: number): Promise<Float32Array> => {
		const data = await source.readF32(name);
		checkSize(name, size, data.length);
		return data;
	};
	/** The tensor as f16 bits, or null when 'auto' keeps it in f32 (recorded in keptF32). */
	const readF16 = async (name: string, size: number): Promise<Uint16Array | null> => {
		const dtype = storedOf(name);
		let conv: F16Conversion;
		if (dtype === 'float16' && source.readF16Bits) {
			conv = { bits: await source.readF16Bits(name), relativeError: 0 };
		} else if (dtype === 'bfloat16' && source.readBf16Bits) {
			conv = bf16BitsToF16(await source.readBf16Bits(name));
		} else {
			conv = f32ToF16(await readF32(name, size));
		}
		checkSize(name, size, conv.bits.length);
		if (policy === 'auto' && !(conv.relativeError <= F16_MAX_RELATIVE_ERROR)) {
			keptF32.push({ name, stored: dtype, relativeError: conv.relativeError });
			return null;
		}
		return conv.bits;
	};
	/** Reads `name` and uploads it with `make`, in the dtype planned (or f32 if the check
	 * keeps it there), keeping the books: ownership, dtypes, progress. */
	const load = async <T extends { release(): void }>(
		name: string,
		size: number,
		make: (data: { f16: Uint16Array } | { f32: Float32Array }) => T
	): Promise<T> => {
		const planned = plannedDtype(name, storedOf(name), policy);
		const bits = planned === 'f16' ? await readF16(name, size) : null;
		const dtype: GpuWeightDType = bits ? 'f16' : 'f32';
		const t = make(bits ? { f16: bits } : { f32: await readF32(name, size) });
		owned.push(t);
		dtypes[name] = dtype;
		total += bytesOf(dtype, size) - bytesOf(planned, size);
		done += bytesOf(dtype, size);
		options.onProgress?.(done, total);
		return t;
	};
	const upload = (name: string, shape: number[]): Promise<Tensor<GpuWeightDType>> => {
		const size = shape.reduce((a, b) => a * b, 1);
		return load(name, size, (data): Tensor<GpuWeightDType> => {
			if ('f32' in data) return uploadTensor(gpu, data.f32, shape, 'f32');
			const t = createTensor(gpu, shape, 'f16');
			writeF16Bits(t, data.f16);
			return t;
		});
	};
	/** Norms and biases: always f32. */
	const uploadF32 = (name: string, shape: number[]) =>
		upload(name, shape) as Promise<Tensor<'f32'>>;
	const chunked = (name: string): Promise<ChunkedMatrix<GpuWeightDType>> => {
		const { vocabSize: v, hiddenSize: c } = config;
		const max = options.maxChunkBytes;
		return load(name, v * c, (data): ChunkedMatrix<GpuWeightDType> =>
			'f32' in data
				? uploadChunkedMatrix(gpu, data.f32, v, c, 'f32', max)
				: uploadChunkedF16Bits(gpu, data.f16, v, c, max)
		);
	};

	try {
		const { hiddenSize: c, headDim } = config;
		const embed = await chunked('model.embed_tokens.weight');
		const layers: LayerWeights[] = [];
		for (let i = 0; i < config.numLayers; i++) {
			const p = `model.layers.${i}`;
			const inputNorm = await uploadF32(`${p}.input_layernorm.weight`, [c]);
			const proj = {} as Record<ProjectionName, Tensor<GpuWeightDType>>;
			const bias: LayerWeights['bias'] = {};
			for (const name of PROJECTIONS) {
				const shape = projectionShape(config, name);
				proj[name] = await upload(`${projectionPath(i, name)}.weight`, shape);
				const biasName = `${projectionPath(i, name)}.bias`;
				if (names.has(biasName)) bias[name] = await uploadF32(biasName, [shape[0]]);
			}
			const qNorm = config.qkNorm
				? await uploadF32(`${p}.self_attn.q_norm.weight`, [headDim])
				: undefined;
			const kNorm = config.qkNorm
				? await uploadF32(`${p}.self_attn.k_norm.weight`, [headDim])
				: undefined;
			const postNorm = await uploadF32(`${p}.post_attention_layernorm.weight`, [c]);
			layers.push({ inputNorm, postNorm, proj, bias, qNorm, kNorm });
		}
		const finalNorm = await uploadF32('model.norm.weight', [c]);
		const lmHead = config.tieWordEmbeddings ? embed : await chunked('lm_head.weight');
		let released = false;
		return {
			embed,
			lmHead,
			finalNorm,
			layers,
			bytes: done,
			dtypes,
			keptF32,
			release() {
				if (released) return;
				released = true;
				for (const t of owned) t.release();
			}
		};
	} catch (error) {
		for (const t of owned) t.release();
		throw error;
	}
}
