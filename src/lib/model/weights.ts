/**
 * @file A model's frozen weights on the GPU, uploaded from a WeightSource as f32: the
 * embedding (and an untied lm_head) as ChunkedMatrix, so a 151936 x 896 vocabulary
 * (545 MB in f32) works on devices that bind less than that at once; every other tensor
 * as one Tensor (the largest, an MLP projection of a 1B model, is 8192 x 2048 x 4 = 64 MiB).
 *
 * The source is checked against the config (names and shapes, weight-spec.ts) before
 * anything is allocated; if reading or uploading fails part-way, everything uploaded so
 * far is released before the error propagates.
 *
 * Ownership: the ModelWeights owns every tensor; `release()` frees them all (the tied
 * lm_head is the embedding itself and is freed once).
 *
 * Not yet: f16 weights on devices with `shader-f16` (half the memory; matmul already has
 * f16-operand variants, but the embedding and logsoftmax kernels take f32 only). The
 * hook is `readF16Bits` on WeightSource; until then f16/bf16 checkpoints are widened.
 */
import { ChunkedMatrix, uploadChunkedMatrix } from '../gpu/chunked';
import type { Gpu } from '../gpu/device';
import { uploadTensor, type Tensor } from '../gpu/tensor';
import { WeightsMismatchError } from './errors';
import type { ModelConfig, WeightSource } from './types';
import { PROJECTIONS, projectionPath, projectionShape, type ProjectionName } from './weight-spec';
import { weightSpecs } from './weight-spec';

export interface LayerWeights {
	inputNorm: Tensor<'f32'>;
	postNorm: Tensor<'f32'>;
	/** nn.Linear weights [out, in], row-major. */
	proj: Record<ProjectionName, Tensor<'f32'>>;
	/** Biases [out] of the projections that have one (Qwen2's q/k/v). */
	bias: Partial<Record<ProjectionName, Tensor<'f32'>>>;
	/** Per-head RMSNorm weights [headDim] (Qwen3). */
	qNorm?: Tensor<'f32'>;
	kNorm?: Tensor<'f32'>;
}

export interface ModelWeights {
	/** [V, C]. */
	embed: ChunkedMatrix<'f32'>;
	/** [V, C]: the embedding itself when the config ties them. */
	lmHead: ChunkedMatrix<'f32'>;
	finalNorm: Tensor<'f32'>;
	layers: LayerWeights[];
	/** Bytes of GPU memory held. */
	bytes: number;
	release(): void;
}

export interface UploadWeightsOptions {
	/** Largest chunk of the embedding / lm_head in bytes (tests use it to force chunking);
	 * default: the device's binding limit. */
	maxChunkBytes?: number;
	/** Called after each tensor with the bytes uploaded so far and the total. */
	onProgress?(doneBytes: number, totalBytes: number): void;
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
	const specs = weightSpecs(config);
	const names = new Set(specs.map((s) => s.name));
	const total = specs.reduce((s, w) => s + 4 * w.shape.reduce((a, b) => a * b, 1), 0);
	const owned: { release(): void }[] = [];
	let done = 0;

	const read = async (name: string, size: number): Promise<Float32Array> => {
		const data = await source.readF32(name);
		// The reader disagrees with list(): the source is inconsistent.
		if (data.length !== size)
			throw new WeightsMismatchError([], [{ name, expected: [size], actual: [data.length] }]);
		return data;
	};
	const upload = async (name: string, shape: number[]): Promise<Tensor<'f32'>> => {
		const size = shape.reduce((a, b) => a * b, 1);
		const t = uploadTensor(gpu, await read(name, size), shape, 'f32');
		owned.push(t);
		done += 4 * size;
		options.onProgress?.(done, total);
		return t;
	};
	const chunked = async (name: string): Promise<ChunkedMatrix<'f32'>> => {
		const { vocabSize: v, hiddenSize: c } = config;
		const data = await read(name, v * c);
		const m = uploadChunkedMatrix(gpu, data, v, c, 'f32', options.maxChunkBytes);
		owned.push(m);
		done += 4 * v * c;
		options.onProgress?.(done, total);
		return m;
	};

	try {
		const { hiddenSize: c, headDim } = config;
		const embed = await chunked('model.embed_tokens.weight');
		const layers: LayerWeights[] = [];
		for (let i = 0; i < config.numLayers; i++) {
			const p = `model.layers.${i}`;
			const inputNorm = await upload(`${p}.input_layernorm.weight`, [c]);
			const proj = {} as Record<ProjectionName, Tensor<'f32'>>;
			const bias: LayerWeights['bias'] = {};
			for (const name of PROJECTIONS) {
				const shape = projectionShape(config, name);
				proj[name] = await upload(`${projectionPath(i, name)}.weight`, shape);
				const biasName = `${projectionPath(i, name)}.bias`;
				if (names.has(biasName)) bias[name] = await upload(biasName, [shape[0]]);
			}
			const qNorm = config.qkNorm
				? await upload(`${p}.self_attn.q_norm.weight`, [headDim])
				: undefined;
			const kNorm = config.qkNorm
				? await upload(`${p}.self_attn.k_norm.weight`, [headDim])
				: undefined;
			const postNorm = await upload(`${p}.post_attention_layernorm.weight`, [c]);
			layers.push({ inputNorm, postNorm, proj, bias, qNorm, kNorm });
		}
		const finalNorm = await upload('model.norm.weight', [c]);
		const lmHead = config.tieWordEmbeddings ? embed : await chunked('lm_head.weight');
		let released = false;
		return {
			embed,
			lmHead,
			finalNorm,
			layers,
			bytes: total,
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
