/**
 * @file The GPU state of decoding B sequences with S cache slots each: the KV cache, the
 * step's buffers, and its commands recorded once (captured-commands.ts): the body (embed the
 * tokens last sampled, every decode layer, advance the positions) and the head (final norm,
 * logits [B, V], sampler). A step replays them with only the sampler's counter changed and
 * reads back 8 bytes a sequence (id, logprob). The masked head (constrained calls) and the
 * top-logprobs pass [B, 20] are recorded on first use; release() frees it all.
 */
import type { Params, Recorder } from '../../gpu/kernel';
import { copyColumns } from '../../gpu/kernels/copy';
import { embeddingForward } from '../../gpu/kernels/embedding';
import { advancePositions } from '../../gpu/kernels/kv-cache';
import { matmul } from '../../gpu/kernels/matmul';
import { skinnyMatmul } from '../../gpu/kernels/skinny';
import { rmsNormForward } from '../../gpu/kernels/rmsnorm';
import { sampleTokens, type SampleTokensArgs } from '../../gpu/kernels/sampling';
import { MAX_TOP_LOGPROBS, topLogprobs } from '../../gpu/kernels/top-logprobs';
import { createTensor, Tensor } from '../../gpu/tensor';
import { CapturedCommands } from '../transformer/captured-commands';
import {
	decodeActSpecs,
	decodeLayerForward,
	decodeMatmulMode,
	type DecodeActs,
	type DecodeMatmulOptions
} from '../transformer/decode-layer';
import { KvCache } from '../transformer/kv-cache';
import type { TransformerModel } from '../transformer/transformer';
import type { GenerationWeights } from './merged-lora';

const MAP_READ = 0x0001;
const COPY_DST = 0x0008;

/** A recorded head (final norm, logits, sampler) and where its sampler's parameters are. */
interface Head {
	commands: CapturedCommands;
	samplerIndex: number;
	samplerArgs: SampleTokensArgs;
}

/** The GPU state of decoding B sequences with S cache slots each, and its recorded step. */
export class DecodeSession {
	readonly cache: KvCache;
	readonly #owned: Tensor[] = [];
	/** The step's tokens' residual stream [B, C]. */
	readonly x: Tensor;
	readonly positions: Tensor;
	readonly tokens: Tensor;
	readonly sampled: Tensor;
	readonly temperature: Tensor;
	readonly topK: Tensor;
	readonly topP: Tensor;
	readonly seeds: Tensor;
	readonly #staging: GPUBuffer[] = [];
	#body?: CapturedCommands;
	/** The head without a mask, and (made on the first constrained call) with one. */
	#head?: Head;
	#maskedHead?: Head;
	/** u32 [B, ceil(V / 32)]: each row's allowed tokens (constrained calls only). */
	#mask?: Tensor;
	/** The top-logprobs pass and its outputs [B, 20] (made on the first call that asks). */
	#top?: { commands: CapturedCommands; ids: Tensor; logprobs: Tensor; staging: GPUBuffer[] };
	readonly #decodeMatmul?: DecodeMatmulOptions;
	#headInputs?: { hf: Tensor; rstdF: Tensor; logits: Tensor; chunkLogits?: Tensor };

	constructor(
		readonly model: TransformerModel,
		/** The layers and adapter every prefill and decode step of this session runs with. */
		readonly generationWeights: GenerationWeights,
		readonly B: number,
		readonly S: number,
		decodeMatmul?: DecodeMatmulOptions
	) {
		const { gpu, config, weights } = model;
		this.#decodeMatmul = decodeMatmul;
		this.cache = new KvCache(gpu, config, B, S);
		try {
			const t = <D extends 'f32' | 'u32'>(shape: number[], dtype: D) => this.#tensor(shape, dtype);
			const C = config.hiddenSize;
			const V = config.vocabSize;
			this.x = t([B, C], 'f32');
			this.positions = t([B], 'u32');
			this.tokens = t([B], 'u32');
			this.sampled = t([B], 'f32');
			this.temperature = t([B], 'f32');
			this.topK = t([B], 'u32');
			this.topP = t([B], 'f32');
			this.seeds = t([B], 'u32');
			for (let i = 0; i < 2; i++)
				this.#staging.push(gpu.device.createBuffer({ size: 8 * B, usage: MAP_READ | COPY_DST }));
			const chunks = weights.lmHead.chunks;
			const maxRows = Math.max(...chunks.map((c) => c.rows));
			const skinnyHead = decodeMatmulMode(decodeMatmul, B) !== 'tiled';
			this.#headInputs = {
				hf: t([B, C], 'f32'),
				rstdF: t([B], 'f32'),
				logits: t([B, V], 'f32'),
				chunkLogits: chunks.length > 1 && !skinnyHead ? t([B, maxRows], 'f32') : undefined
			};
			const specs = decodeActSpecs(config, B, this.generationWeights.lora?.config.rank ?? 0);
			const acts = {} as Record<string, Tensor | undefined>;
			for (const [k, s] of Object.entries(specs)) acts[k] = s ? t(s.shape, 'f32') : undefined;

			this.#head = this.#recordHead(undefined);

			// The body: embed the last sampled tokens, every layer, advance the positions.
			const body = (this.#body = new CapturedCommands(gpu));
			const rec = body.recorder;
			embeddingForward(rec, { ids: this.tokens, weight: weights.embed, out: this.x });
			const layers = this.generationWeights.layers;
			const ctx = {
				config,
				B,
				positions: this.positions,
				invFreq: model.invFreq,
				attentionScaling: model.attentionScaling,
				lora: this.generationWeights.lora,
				matmul: decodeMatmul
			};
			for (let l = 0; l < config.numLayers; l++) {
				const cache = { k: this.cache.k[l], v: this.cache.v[l] };
				body.scope(() =>
					decodeLayerForward(rec, ctx, l, layers[l], this.x, acts as DecodeActs, cache)
				);
			}
			advancePositions(rec, { positions: this.positions });
			body.finish();
		} catch (error) {
			this.release();
			throw error;
		}
	}

	#tensor<D extends 'f32' | 'u32'>(shape: number[], dtype: D): Tensor {
		const x = createTensor(this.model.gpu, shape, dtype);
		this.#owned.push(x);
		return x;
	}

	/** Records the head: final norm, logits, sampler (with `mask`: the masked sampler). The
	 * sampler is recorded at step 0; submitStep moves it on with setParams. */
	#recordHead(mask: Tensor | undefined): Head {
		const { gpu, config, weights } = this.model;
		const { hf, rstdF, logits, chunkLogits } = this.#headInputs!;
		const B = this.B;
		const decodeMatmul = this.#decodeMatmul;
		const head = new CapturedCommands(gpu);
		try {
			const rec = head.recorder;
			const eps = config.rmsNormEps;
			const chunks = weights.lmHead.chunks;
			// Skinny: every chunk of the lm_head writes its columns of the logits, one call,
			// with the final norm fused in ('fused') or before it.
			const skinnyHead = decodeMatmulMode(decodeMatmul, B) !== 'tiled';
			const fusedNorm = decodeMatmulMode(decodeMatmul, B) === 'fused';
			if (!fusedNorm)
				rmsNormForward(rec, { x: this.x, weight: weights.finalNorm, y: hf, rstd: rstdF, eps });
			if (skinnyHead)
				skinnyMatmul(rec, {
					x: fusedNorm ? this.x : hf,
					norm: fusedNorm ? { weight: weights.finalNorm, eps } : undefined,
					segments: chunks.map((c) => ({ w: c.tensor, y: logits, yOffset: c.rowOffset })),
					tiling: decodeMatmul?.tiling
				});
			else
				for (const c of chunks) {
					if (!chunkLogits) {
						matmul(rec, { a: hf, b: c.tensor, c: logits, transB: true });
						continue;
					}
					const z = new Tensor(gpu, chunkLogits.buffer, [B, c.rows], 'f32', { giveBack: () => {} });
					matmul(rec, { a: hf, b: c.tensor, c: z, transB: true });
					copyColumns(rec, { src: z, dst: logits, offset: c.rowOffset });
				}
			const samplerArgs: SampleTokensArgs = {
				logits,
				temperature: this.temperature,
				topK: this.topK,
				topP: this.topP,
				seeds: this.seeds,
				tokens: this.tokens,
				logprobs: this.sampled,
				step: 0,
				mask
			};
			const samplerIndex = head.nextDispatch;
			sampleTokens(rec, samplerArgs);
			head.finish();
			return { commands: head, samplerIndex, samplerArgs };
		} catch (error) {
			head.release();
			throw error;
		}
	}

	/** The mask buffer [B, ceil(V / 32)] (made, with the masked head, on first use). */
	get mask(): Tensor {
		if (!this.#mask) {
			const mask = this.#tensor([this.B, Math.ceil(this.model.config.vocabSize / 32)], 'u32');
			this.#maskedHead = this.#recordHead(mask);
			this.#mask = mask;
		}
		return this.#mask;
	}

	/** The top-logprobs pass (recorded on first use). */
	#topPass() {
		if (!this.#top) {
			const { gpu } = this.model;
			const ids = this.#tensor([this.B, MAX_TOP_LOGPROBS], 'u32');
			const logprobs = this.#tensor([this.B, MAX_TOP_LOGPROBS], 'f32');
			const commands = new CapturedCommands(gpu);
			try {
				topLogprobs(commands.recorder, {
					logits: this.#headInputs!.logits,
					temperature: this.temperature,
					ids,
					logprobs
				});
				commands.finish();
			} catch (error) {
				commands.release();
				throw error;
			}
			const size = 8 * this.B * MAX_TOP_LOGPROBS;
			const staging = [0, 1].map(() =>
				gpu.device.createBuffer({ size, usage: MAP_READ | COPY_DST })
			);
			this.#top = { commands, ids, logprobs, staging };
		}
		return this.#top;
	}

	/** Encodes and submits step `step` (0: the head only, after a prefill) with the
	 * readback of its ids and logprobs into staging buffer step % 2; `masked`: sampling
	 * only the tokens `mask` allows; `top`: the top-logprobs pass and its readback too. */
	submitStep(step: number, masked = false, top = false): void {
		const gpu = this.model.gpu;
		const head = masked ? this.#maskedHead! : this.#head!;
		let params: Params | undefined;
		const probe = {
			gpu,
			dispatch: (_k: unknown, _b: unknown, _w: unknown, p: Params) => (params = p)
		} as unknown as Recorder;
		sampleTokens(probe, { ...head.samplerArgs, step });
		head.commands.setParams(head.samplerIndex, params!);
		const encoder = gpu.device.createCommandEncoder();
		if (step > 0) this.#body!.encode(encoder);
		head.commands.encode(encoder);
		const staging = this.#staging[step % 2];
		encoder.copyBufferToBuffer(this.tokens.buffer, 0, staging, 0, 4 * this.B);
		encoder.copyBufferToBuffer(this.sampled.buffer, 0, staging, 4 * this.B, 4 * this.B);
		if (top) {
			const t = this.#topPass();
			t.commands.encode(encoder);
			const bytes = 4 * this.B * MAX_TOP_LOGPROBS;
			encoder.copyBufferToBuffer(t.ids.buffer, 0, t.staging[step % 2], 0, bytes);
			encoder.copyBufferToBuffer(t.logprobs.buffer, 0, t.staging[step % 2], bytes, bytes);
		}
		gpu.device.queue.submit([encoder.finish()]);
	}

	/** Waits for step `step`'s top logprobs: ids and logprobs [B, 20], row-major. */
	async readTop(step: number): Promise<{ ids: Uint32Array; logprobs: Float32Array }> {
		const staging = this.#topPass().staging[step % 2];
		await staging.mapAsync(MAP_READ);
		const data = staging.getMappedRange().slice(0);
		staging.unmap();
		const n = this.B * MAX_TOP_LOGPROBS;
		return { ids: new Uint32Array(data, 0, n), logprobs: new Float32Array(data, 4 * n, n) };
	}

	/** Waits for step `step` and returns its ids and logprobs [B]. */
	async readStep(step: number): Promise<{ ids: Uint32Array; logprobs: Float32Array }> {
		const staging = this.#staging[step % 2];
		await staging.mapAsync(MAP_READ);
		const data = staging.getMappedRange().slice(0);
		staging.unmap();
		return {
			ids: new Uint32Array(data, 0, this.B),
			logprobs: new Float32Array(data, 4 * this.B, this.B)
		};
	}

	/** Dispatches per decode step (body + head), for benchmarks. */
	get dispatchesPerStep(): number {
		return (this.#body?.dispatchCount ?? 0) + (this.#head?.commands.dispatchCount ?? 0);
	}

	release(): void {
		this.#body?.release();
		this.#head?.commands.release();
		this.#maskedHead?.commands.release();
		this.#top?.commands.release();
		for (const b of this.#top?.staging ?? []) b.destroy();
		for (const t of this.#owned) t.release();
		for (const b of this.#staging) b.destroy();
		this.cache.release();
	}
}
