/**
 * @file Batched text generation on the GPU with a KV cache: the N prompts of a call are
 * prefilled, then decoded together one token per sequence per step, sampled on the GPU
 * (temperature, top-k, top-p, greedy; Philox keyed per sequence), with the model's
 * current LoRA adapters (the policy being trained).
 *
 *   const gen = new Generator(model);
 *   const [a, b] = await gen.generate([[1, 2, 3], [4, 5]], { maxTokens: 64, seed: 7 });
 *   a.ids, a.logprobs, a.finishReason   // new tokens, their sampling logprobs, 'stop' | 'length'
 *
 * Batches: a call's prompts are decoded in batches of at most `maxBatch` (default: as many
 * as the KV cache takes within AUTO_KV_BYTES, 64 to AUTO_MAX_BATCH), so hundreds of short
 * games decode in one batch, not in rounds of 64 (each round is a prefill and a decode loop
 * of its own, with their waits on the GPU: what bounds a small model's rollouts).
 *
 * Prefill: prompts in groups of at most prefillTokenLimit padded tokens (4096 for a model
 * as wide as Qwen2.5-0.5B, more for narrower ones: a group's activations stay about the
 * same size in bytes), each group a
 * right-padded batch through layer.ts's layerForward (the training forward), whose
 * post-RoPE k and v of each sequence are copied into the cache slots 0..len-1, and whose
 * last real row per sequence becomes the sequence's hidden state for the first sample.
 *
 * Decode: every step is the same GPU commands (captured-commands.ts), recorded once per
 * batch shape: the embedding of the tokens the last step sampled (read on the GPU), every
 * layer (decode-layer.ts: attention over each sequence's own cache length), the final
 * norm, the logits [B, V] (up to 32 sequences: one skinny matmul over every lm_head chunk,
 * the norm fused in; see GeneratorOptions.decodeMatmul) and the sampler; token ids, positions and the cache live on the
 * GPU. Per step the host writes the sampler's step counter, submits, and reads back the
 * B token ids and logprobs (one 8 B-per-sequence readback). The host stays one step
 * ahead: step s + 1 is submitted before step s's ids are read, since it needs nothing
 * from the host; a sequence that finished at step s rides along in step s + 1 (its result
 * ignored; its cache writes stay inside its own rows), and when the last one finishes
 * that one extra step is wasted.
 *
 * Constrained decoding (GenerateOptions.constraints, a TokenConstraint per sequence, e.g.
 * JSON of a schema from model/constrain/): before each step the host asks every active
 * constrained sequence for its allowed tokens and writes them as a bitmask (step-masks.ts)
 * that a second recorded head's masked sampler reads. A step's mask needs the step
 * before's token, so a call with a constraint gives up the look-ahead; a call with none
 * runs exactly the unconstrained path (same head, no upload).
 *
 * Top logprobs (GenerateOptions.topLogprobs, OpenAI's top_logprobs): a call that asks
 * records a third command list after the head (gpu/kernels/top-logprobs.ts: the 20 most
 * likely tokens of each row and their log_softmax(logits / T)) and reads them back beside
 * the ids, 160 B more per sequence per step; a call that does not ask runs exactly the
 * step above.
 *
 * Reproducibility: sequence i of a call (its index in `prompts`) samples with the Philox
 * key derived from (seed, i) at counter = the token's index, so a call repeats exactly
 * and a sequence's draws do not depend on its neighbours (its logits may still differ in
 * the last bits with the batch size: the matmuls' tilings depend on the row count).
 *
 * Memory: the call's estimate (generation-memory.ts) is checked against the model's
 * budget and the device's per-buffer limits before anything is allocated
 * (ModelTooLargeError, with the numbers). The KV cache and the step's buffers are kept for
 * the next call of the same batch size and a similar length (SLOT_GRANULE); `release()`
 * frees them.
 */
import { ShapeMismatchError } from '../gpu/errors';
import { Recorder, type Params } from '../gpu/kernel';
import { copyColumns, copyRowSpans, uploadRowSpans } from '../gpu/kernels/copy';
import { embeddingForward } from '../gpu/kernels/embedding';
import { advancePositions } from '../gpu/kernels/kv-cache';
import { matmul } from '../gpu/kernels/matmul';
import { skinnyMatmul } from '../gpu/kernels/skinny';
import { rmsNormForward } from '../gpu/kernels/rmsnorm';
import { sampleTokens, type SampleTokensArgs } from '../gpu/kernels/sampling';
import { MAX_TOP_LOGPROBS, topLogprobs } from '../gpu/kernels/top-logprobs';
import { BufferPool } from '../gpu/pool';
import { createTensor, Tensor, writeTensor } from '../gpu/tensor';
import { CapturedCommands } from './captured-commands';
import {
	decodeActSpecs,
	decodeLayerForward,
	decodeMatmulMode,
	type DecodeActs,
	type DecodeMatmulOptions
} from './decode-layer';
import { ContextLengthError, GenerationOptionsError } from './errors';
import { StepMasks } from './step-masks';
import { estimateGenerationMemory } from './generation-memory';
import { KvCache, kvCacheBufferBytes, kvCacheBytes } from './kv-cache';
import { layerForward, type LayerContext } from './layer';
import { checkModelMemory, fitsModelMemory, type MemoryEstimate } from './memory';
import type { TransformerModel } from './transformer';
import type { ModelConfig } from './types';
import { layerSpecs, loraActSpecs, type TensorSpec } from './workspace';

export interface GenerateOptions {
	/** New tokens per sequence at most (finish 'length' when reached). */
	maxTokens: number;
	/** Default 1; <= 0 is greedy. */
	temperature?: number;
	/** Default 1 (off). */
	topP?: number;
	/** Default 0 (off). */
	topK?: number;
	/** Makes sampling reproducible: sequence i of the call samples with a key derived from
	 * (seed, i), so the same call repeats exactly and a sequence does not depend on its
	 * batch neighbours. Default: a random seed. */
	seed?: number;
	/** The Philox key of each prompt's sequence, overriding `seed`: lets one call decode the
	 * sequences of several seeded requests, each with the key it would have alone
	 * (`sequenceSeed(its seed, its index)`). One u32 per prompt. */
	sequenceKeys?: readonly number[];
	/** Token ids that end a sequence (finish 'stop', the stop token kept in ids). Default:
	 * the model config's eosTokenIds (generation_config.json). */
	stopTokenIds?: readonly number[];
	/** Ignore stop token ids (benchmarks). */
	ignoreEos?: boolean;
	/** Called after every decode step with the tokens that step produced, for streaming and
	 * stop strings; it returns the indices of sequences to stop now (finish 'stop'), or nothing. */
	onStep?: (tokens: readonly StepToken[]) => readonly number[] | void;
	/** Constrained decoding: prompt i's sequence samples only the tokens constraints[i]
	 * allows (undefined: any token). See TokenConstraint. */
	constraints?: readonly (TokenConstraint | undefined)[];
	/** The k (0..20) most likely tokens of every step with their logprobs
	 * (log_softmax(logits / T), as `logprob`); default 0: none, and no extra GPU work. */
	topLogprobs?: number;
	/** Aborts the call: checked between prefill layers, batches and decode steps; the call
	 * rejects with the signal's reason once the GPU work it submitted has finished. */
	signal?: AbortSignal;
}

/** One of a step's most likely tokens. */
export interface TopLogprob {
	id: number;
	logprob: number;
}

/**
 * What restricts one sequence's next token (constrained decoding: e.g. JSON of a schema,
 * model/constrain/). Before each step the Generator asks for the allowed tokens; after it,
 * it reports the token sampled. The sampler draws from the model's distribution
 * renormalised over the allowed tokens (top-k and top-p apply within them); the logprob
 * it reports stays the model's own, log_softmax(logits / T)[id] over the full vocabulary,
 * as for top-k and top-p (see sampling.ts). A sequence whose mask allows nothing ends
 * with finish 'stop'.
 */
export interface TokenConstraint {
	/** ORs the allowed next tokens into `mask` (bit id % 32 of word id / 32; the caller
	 * zeroes it; ceil(V / 32) words), the `stop` ids among them when the text may end here. */
	fillMask(mask: Uint32Array, stop: readonly number[]): void;
	/** The token just sampled (one the last mask allowed). */
	accept(id: number): void;
}

export interface StepToken {
	index: number;
	id: number;
	logprob: number;
	/** With topLogprobs: the step's k most likely tokens, most likely first. */
	top?: TopLogprob[];
}

export interface GeneratedSequence {
	promptIds: number[];
	/** New tokens only. */
	ids: number[];
	/** The sampling policy's logprob of each new token (log_softmax(logits / T)[id]). */
	logprobs: number[];
	/** With topLogprobs: per new token, the k most likely tokens at that step. */
	topLogprobs?: TopLogprob[][];
	finishReason: 'stop' | 'length';
}

export interface GeneratorOptions {
	/** Sequences decoded together at most; a call with more runs them in rounds of this
	 * many (seeds and indices stay those of the whole call). Default: autoBatch's. */
	maxBatch?: number;
	/** Context window (prompt + new tokens) at most; default and cap: the model's
	 * max_position_embeddings. */
	maxContext?: number;
	/** The decode step's matmul kernels (default: fused skinny kernels up to 32 sequences,
	 * see decode-layer.ts); benchmarks compare the variants. */
	decodeMatmul?: DecodeMatmulOptions;
	/** Padded tokens per prefill group at most (default: prefillTokenLimit's for the model);
	 * benchmarks compare. */
	prefillTokens?: number;
}

/** The default batch's bounds (autoBatch). */
const MIN_AUTO_BATCH = 64;
const AUTO_MAX_BATCH = 1024;
/** The KV cache a default batch may take (f32 k and v of every layer). */
const AUTO_KV_BYTES = 1 << 30;

/**
 * The default batch for prompts needing `slots` cache slots each: all of them up to
 * AUTO_MAX_BATCH, while the KV cache stays within AUTO_KV_BYTES and its buffers within the
 * device's binding limit; never under MIN_AUTO_BATCH (as before: the memory check then
 * says what does not fit).
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
/** Cache slots per sequence are allocated in multiples of this, so calls of similar
 * lengths share one cache and one recorded step. */
const SLOT_GRANULE = 256;
const MAP_READ = 0x0001;
const COPY_DST = 0x0008;

/** 32-bit finaliser of MurmurHash3: a bijection that mixes every input bit into the output. */
function fmix32(h: number): number {
	h ^= h >>> 16;
	h = Math.imul(h, 0x85ebca6b);
	h ^= h >>> 13;
	h = Math.imul(h, 0xc2b2ae35);
	return (h ^ (h >>> 16)) >>> 0;
}

/** The u32 Philox key of sequence `index` of a call with `seed` (any safe integer). */
export function sequenceSeed(seed: number, index: number): number {
	const lo = seed >>> 0;
	const hi = Math.floor(seed / 2 ** 32) >>> 0;
	return fmix32(fmix32(fmix32(lo) ^ hi) ^ Math.imul(index + 1, 0x9e3779b1));
}

/** A random u32 (crypto when the host has it): a call's seed, or one sequence's key. */
export function randomSeed(): number {
	const c = (globalThis as { crypto?: Crypto }).crypto;
	if (c?.getRandomValues) return c.getRandomValues(new Uint32Array(1))[0];
	return Math.floor(Math.random() * 2 ** 32);
}

interface Resolved {
	maxTokens: number;
	temperature: number;
	topP: number;
	topK: number;
	/** Top logprobs per step (0: none). */
	top: number;
	seed: number;
	keys: readonly number[] | undefined;
	stop: Set<number>;
}

function resolveOptions(o: GenerateOptions, eos: readonly number[], vocab: number): Resolved {
	const bad = (what: string) => {
		throw new GenerationOptionsError(what);
	};
	if (!(Number.isInteger(o.maxTokens) && o.maxTokens >= 1))
		bad(`maxTokens must be a positive integer, got ${o.maxTokens}`);
	const temperature = o.temperature ?? 1;
	if (!Number.isFinite(temperature)) bad(`temperature must be a finite number, got ${temperature}`);
	const topP = o.topP ?? 1;
	if (!(topP > 0 && topP <= 1)) bad(`topP must be in (0, 1], got ${topP}`);
	const topK = o.topK ?? 0;
	if (!(Number.isInteger(topK) && topK >= 0 && topK < 2 ** 32))
		bad(`topK must be a non-negative integer (0: off), got ${topK}`);
	const top = o.topLogprobs ?? 0;
	if (!(Number.isInteger(top) && top >= 0 && top <= Math.min(MAX_TOP_LOGPROBS, vocab)))
		bad(`topLogprobs must be an integer in [0, ${Math.min(MAX_TOP_LOGPROBS, vocab)}], got ${top}`);
	const seed = o.seed ?? randomSeed();
	if (!Number.isSafeInteger(seed)) bad(`seed must be an integer, got ${seed}`);
	const stopIds = o.ignoreEos ? [] : (o.stopTokenIds ?? eos);
	for (const id of stopIds)
		if (!(Number.isInteger(id) && id >= 0 && id < vocab))
			bad(`stop token id ${id} is outside the vocabulary [0, ${vocab})`);
	const keys = o.sequenceKeys;
	if (keys && !keys.every((k) => Number.isInteger(k) && k >= 0 && k < 2 ** 32))
		bad('sequenceKeys must be u32 integers, one per prompt');
	return {
		maxTokens: o.maxTokens,
		temperature,
		topP,
		topK,
		top,
		seed,
		keys,
		stop: new Set(stopIds)
	};
}

/** Groups of consecutive prompts whose padded size stays within `limit` tokens. */
function prefillGroups(
	lengths: readonly number[],
	limit: number
): { start: number; count: number; T: number }[] {
	const groups: { start: number; count: number; T: number }[] = [];
	for (let b = 0; b < lengths.length; b++) {
		const g = groups.at(-1);
		const T = g ? Math.max(g.T, lengths[b]) : lengths[b];
		if (g && (g.count + 1) * T <= limit) {
			g.count++;
			g.T = T;
		} else groups.push({ start: b, count: 1, T: lengths[b] });
	}
	return groups;
}

/** A recorded head (final norm, logits, sampler) and where its sampler's parameters are. */
interface Head {
	commands: CapturedCommands;
	samplerIndex: number;
	samplerArgs: SampleTokensArgs;
}

/** The GPU state of decoding B sequences with S cache slots each, and its recorded step. */
class DecodeSession {
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
			const specs = decodeActSpecs(config, B, model.lora?.config.rank ?? 0);
			const acts = {} as Record<string, Tensor | undefined>;
			for (const [k, s] of Object.entries(specs)) acts[k] = s ? t(s.shape, 'f32') : undefined;

			this.#head = this.#recordHead(undefined);

			// The body: embed the last sampled tokens, every layer, advance the positions.
			const body = (this.#body = new CapturedCommands(gpu));
			const rec = body.recorder;
			embeddingForward(rec, { ids: this.tokens, weight: weights.embed, out: this.x });
			const ctx = {
				config,
				B,
				positions: this.positions,
				invFreq: model.invFreq,
				attentionScaling: model.attentionScaling,
				lora: model.lora,
				matmul: decodeMatmul
			};
			for (let l = 0; l < config.numLayers; l++) {
				const cache = { k: this.cache.k[l], v: this.cache.v[l] };
				body.scope(() =>
					decodeLayerForward(rec, ctx, l, weights.layers[l], this.x, acts as DecodeActs, cache)
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

/**
 * What a Generator has done since it was made: where a rollout's time goes (the rest of a
 * rollout's wall time is the host's: templates, tokenizing, the environment, scheduling).
 * Wall times on the host's clock, each call's prefill and decode loop awaited to its end.
 */
export interface GeneratorStats {
	/** generate() calls, the batches they were decoded in, and the sequences of all of them. */
	calls: number;
	batches: number;
	sequences: number;
	/** Prompt tokens prefilled, and ms in the prefill. */
	promptTokens: number;
	prefillMs: number;
	/** Decode steps (one token for every live sequence), and ms in the decode loops. */
	decodeSteps: number;
	decodeMs: number;
	/** Decode sessions made (a KV cache and recorded step each; a kept one is reused). */
	sessions: number;
}

/** Decodes with the model's current LoRA adapters (the policy being trained). */
export class Generator {
	readonly stats: GeneratorStats = {
		calls: 0,
		batches: 0,
		sequences: 0,
		promptTokens: 0,
		prefillMs: 0,
		decodeSteps: 0,
		decodeMs: 0,
		sessions: 0
	};
	readonly #model: TransformerModel;
	/** undefined: autoBatch per call. */
	readonly #maxBatch: number | undefined;
	readonly #context: number;
	readonly #pool: BufferPool;
	readonly #decodeMatmul?: DecodeMatmulOptions;
	readonly #prefillTokens: number;
	#session: DecodeSession | undefined;
	/** Calls run one at a time, in order. */
	#queue: Promise<unknown> = Promise.resolve();
	#released = false;

	constructor(model: TransformerModel, options: GeneratorOptions = {}) {
		const maxBatch = options.maxBatch;
		if (maxBatch !== undefined && !(Number.isInteger(maxBatch) && maxBatch >= 1))
			throw new GenerationOptionsError(`maxBatch must be a positive integer, got ${maxBatch}`);
		const limit = model.config.maxPositionEmbeddings;
		const maxContext = options.maxContext ?? limit;
		if (!(Number.isInteger(maxContext) && maxContext >= 1))
			throw new GenerationOptionsError(`maxContext must be a positive integer, got ${maxContext}`);
		this.#model = model;
		this.#maxBatch = maxBatch;
		this.#context = Math.min(maxContext, limit);
		this.#pool = new BufferPool(model.gpu);
		this.#decodeMatmul = options.decodeMatmul;
		const prefillTokens = options.prefillTokens ?? prefillTokenLimit(model.config);
		if (!(Number.isInteger(prefillTokens) && prefillTokens >= 1))
			throw new GenerationOptionsError(
				`prefillTokens must be a positive integer, got ${prefillTokens}`
			);
		this.#prefillTokens = prefillTokens;
	}

	/** The kept decode session's shape and recorded step (undefined before a call). */
	get session(): { batch: number; slots: number; dispatchesPerStep: number } | undefined {
		const s = this.#session;
		return s && { batch: s.B, slots: s.S, dispatchesPerStep: s.dispatchesPerStep };
	}

	/** The context window (prompt + new tokens) a sequence may use. */
	get contextLength(): number {
		return this.#context;
	}

	/** Generates for every prompt; results in the prompts' order. */
	generate(
		prompts: readonly (readonly number[])[],
		options: GenerateOptions
	): Promise<GeneratedSequence[]> {
		const run = this.#queue.then(() => this.#generate(prompts, options));
		this.#queue = run.catch(() => undefined);
		return run;
	}

	/** Frees the KV cache and the step's buffers (the model stays the caller's). */
	release(): void {
		this.#released = true;
		this.#session?.release();
		this.#session = undefined;
		this.#pool.trim();
	}

	async #generate(
		prompts: readonly (readonly number[])[],
		options: GenerateOptions
	): Promise<GeneratedSequence[]> {
		this.#checkLive();
		const { config } = this.#model;
		const o = resolveOptions(options, config.eosTokenIds, config.vocabSize);
		if (o.keys && o.keys.length !== prompts.length)
			throw new GenerationOptionsError(
				`sequenceKeys has ${o.keys.length} keys for ${prompts.length} prompts: give one per prompt`
			);
		if (options.constraints && options.constraints.length !== prompts.length)
			throw new GenerationOptionsError(
				`constraints has ${options.constraints.length} entries for ${prompts.length} prompts: give one (or undefined) per prompt`
			);
		prompts.forEach((p, i) => {
			if (p.length === 0)
				throw new GenerationOptionsError(`prompt ${i} is empty: give at least one token`);
			if (p.length > this.#context) throw new ContextLengthError(p.length, this.#context, i);
			for (let t = 0; t < p.length; t++)
				if (!(Number.isInteger(p[t]) && p[t] >= 0 && p[t] < config.vocabSize))
					throw new ShapeMismatchError(
						`token id ${p[t]} at [${i}, ${t}] is outside the vocabulary [0, ` +
							`${config.vocabSize}); check that the tokenizer belongs to this model`
					);
		});
		options.signal?.throwIfAborted();
		const out: GeneratedSequence[] = [];
		const maxBatch = this.#maxBatch ?? this.#autoBatch(prompts, o.maxTokens);
		this.stats.calls++;
		for (let start = 0; start < prompts.length; start += maxBatch) {
			options.signal?.throwIfAborted();
			const batch = prompts.slice(start, start + maxBatch);
			out.push(...(await this.#generateBatch(batch, start, o, options)));
		}
		return out;
	}

	async #generateBatch(
		prompts: readonly (readonly number[])[],
		base: number,
		o: Resolved,
		options: GenerateOptions
	): Promise<GeneratedSequence[]> {
		const B = prompts.length;
		const lengths = prompts.map((p) => p.length);
		const budget = lengths.map((n) => Math.min(o.maxTokens, this.#context - n));
		const top = o.top > 0;
		const results: GeneratedSequence[] = prompts.map((p) => ({
			promptIds: [...p],
			ids: [],
			logprobs: [],
			...(top ? { topLogprobs: [] } : {}),
			finishReason: 'length'
		}));
		const active = budget.map((n) => n > 0);
		const steps = Math.max(...budget);
		if (steps === 0) return results;
		// Slots: the prompt, then every new token but the last (it is never fed back).
		const need = Math.max(...lengths.map((n, b) => n + Math.max(0, budget[b] - 1)));
		const session = this.#sessionFor(B, need, lengths);
		const seeds = prompts.map((_, b) => o.keys?.[base + b] ?? sequenceSeed(o.seed, base + b));
		writeTensor(session.temperature, new Float32Array(B).fill(o.temperature));
		writeTensor(session.topK, new Uint32Array(B).fill(o.topK));
		writeTensor(session.topP, new Float32Array(B).fill(o.topP));
		writeTensor(session.seeds, seeds);
		writeTensor(session.positions, lengths);
		const stats = this.stats;
		stats.batches++;
		stats.sequences += B;
		stats.promptTokens += lengths.reduce((a, n) => a + n, 0);
		const prefillStart = performance.now();
		await this.#prefill(session, prompts, options.signal);
		const decodeStart = performance.now();
		stats.prefillMs += decodeStart - prefillStart;
		try {
			return await this.#decode(session, prompts, base, o, options, {
				results,
				budget,
				active,
				steps,
				top
			});
		} finally {
			stats.decodeMs += performance.now() - decodeStart;
		}
	}

	/** The decode loop of one batch after its prefill: a token per live sequence a step. */
	async #decode(
		session: DecodeSession,
		prompts: readonly (readonly number[])[],
		base: number,
		o: Resolved,
		options: GenerateOptions,
		state: {
			results: GeneratedSequence[];
			budget: number[];
			active: boolean[];
			steps: number;
			top: boolean;
		}
	): Promise<GeneratedSequence[]> {
		const { results, budget, active, steps, top } = state;
		const B = prompts.length;

		// Constrained: each step's masks need the step before's tokens, so no look-ahead.
		const constraints = options.constraints?.slice(base, base + B);
		const masks = constraints?.some(Boolean)
			? new StepMasks(session.mask, constraints, [...o.stop])
			: undefined;
		const endEmpty = () => {
			for (const b of masks!.write(active)) [active[b], results[b].finishReason] = [false, 'stop'];
			return active.some(Boolean);
		};
		if (masks && !endEmpty()) return results;
		session.submitStep(0, masks !== undefined, top);
		for (let s = 0; s < steps; s++) {
			if (!masks && s + 1 < steps && active.some(Boolean)) session.submitStep(s + 1, false, top);
			this.stats.decodeSteps++;
			const { ids, logprobs } = await session.readStep(s);
			const best = top ? await session.readTop(s) : undefined;
			this.#checkLive();
			options.signal?.throwIfAborted();
			const tokens: StepToken[] = [];
			for (let b = 0; b < B; b++) {
				if (!active[b]) continue;
				const r = results[b];
				masks?.accept(b, ids[b]);
				r.ids.push(ids[b]);
				r.logprobs.push(logprobs[b]);
				const token: StepToken = { index: base + b, id: ids[b], logprob: logprobs[b] };
				if (best) {
					token.top = Array.from({ length: o.top }, (_, j) => ({
						id: best.ids[b * MAX_TOP_LOGPROBS + j],
						logprob: best.logprobs[b * MAX_TOP_LOGPROBS + j]
					}));
					r.topLogprobs!.push(token.top);
				}
				tokens.push(token);
				if (o.stop.has(ids[b])) [active[b], r.finishReason] = [false, 'stop'];
				else if (r.ids.length >= budget[b]) [active[b], r.finishReason] = [false, 'length'];
			}
			const stopNow = tokens.length ? options.onStep?.(tokens) : undefined;
			for (const index of stopNow ?? []) {
				const b = index - base;
				if (!tokens.some((t) => t.index === index)) continue; // not one of this step's
				active[b] = false;
				results[b].finishReason = 'stop';
			}
			if (!active.some(Boolean)) break;
			if (masks && s + 1 < steps) {
				if (!endEmpty()) break;
				session.submitStep(s + 1, true, top);
			}
		}
		return results;
	}

	/** The session for B sequences needing `need` slots: the kept one when it fits, else a
	 * new one, after the memory check. */
	#sessionFor(B: number, need: number, lengths: number[]): DecodeSession {
		const S = Math.ceil(need / SLOT_GRANULE) * SLOT_GRANULE;
		const kept = this.#session;
		const model = this.#model;
		const reuse = kept && kept.B === B && kept.S >= need && kept.S <= 2 * S;
		if (!reuse) {
			kept?.release();
			this.#session = undefined;
		}
		checkModelMemory(
			this.#estimate(B, reuse ? kept.S : S, lengths),
			model.gpu.limits,
			model.memoryBudgetBytes,
			`generating ${B} sequences of up to ${S} tokens with ${model.config.architecture} ` +
				`(${model.config.numLayers} layers, hidden ${model.config.hiddenSize})`
		);
		if (reuse) return kept;
		this.stats.sessions++;
		this.#session = new DecodeSession(model, B, S, this.#decodeMatmul);
		return this.#session;
	}

	/** The memory of generating for prompts of these lengths with S cache slots each. */
	#estimate(B: number, S: number, lengths: readonly number[]): MemoryEstimate {
		const model = this.#model;
		const groups = prefillGroups(lengths, this.#prefillTokens);
		const prefill = groups.reduce(
			(big, g) => (g.count * g.T > big.B * big.T ? { B: g.count, T: g.T } : big),
			{ B: 0, T: 0 }
		);
		return estimateGenerationMemory(model.gpu, model.config, {
			B,
			S,
			prefill,
			lora: model.lora?.config,
			weightChunkRows: model.weights.lmHead.chunks[0].rows,
			weightDtype: model.weights.dtypes
		});
	}

	/**
	 * The default batch (autoBatch) for these prompts and up to `maxTokens` new tokens each,
	 * halved (not below MIN_AUTO_BATCH) while a batch of it would not fit the model's memory
	 * budget or the device's buffers, then evened out over the batches it makes (512
	 * prompts by at most 341: two of 256, not 341 + 171).
	 */
	#autoBatch(prompts: readonly (readonly number[])[], maxTokens: number): number {
		const { gpu, config, memoryBudgetBytes } = this.#model;
		// the longest prompts: any batch of B of them fits if these do
		const longest = prompts.map((p) => p.length).sort((a, b) => b - a);
		const slots = Math.min(this.#context, longest[0] + maxTokens);
		const S = Math.ceil(slots / SLOT_GRANULE) * SLOT_GRANULE;
		let B = autoBatch(config, gpu.limits, prompts.length, slots);
		while (
			B > MIN_AUTO_BATCH &&
			!fitsModelMemory(this.#estimate(B, S, longest.slice(0, B)), gpu.limits, memoryBudgetBytes)
		)
			B = Math.max(MIN_AUTO_BATCH, Math.ceil(B / 2));
		return Math.ceil(prompts.length / Math.ceil(prompts.length / B));
	}

	/** Runs the prompts through the layers, fills the cache and the last hidden states; an
	 * abort stops it between layers (a long prefill is most of a big call's time). */
	async #prefill(
		session: DecodeSession,
		prompts: readonly (readonly number[])[],
		signal: AbortSignal | undefined
	): Promise<void> {
		const model = this.#model;
		const { gpu, config, weights } = model;
		const C = config.hiddenSize;
		for (const g of prefillGroups(
			prompts.map((p) => p.length),
			this.#prefillTokens
		)) {
			const dims = { B: g.count, T: g.T };
			const owned: Tensor[] = [];
			const make = (spec: TensorSpec) => {
				const t = createTensor(gpu, spec.shape, spec.dtype);
				owned.push(t);
				return t;
			};
			const makeAll = <S extends Record<string, TensorSpec | undefined>>(specs: S) => {
				const out = {} as Record<string, Tensor | undefined>;
				for (const [k, spec] of Object.entries(specs)) out[k] = spec ? make(spec) : undefined;
				return out as { [K in keyof S]: S[K] extends TensorSpec ? Tensor : Tensor | undefined };
			};
			try {
				const ids = make({ shape: [g.count * g.T], dtype: 'u32' });
				const lengths = make({ shape: [g.count], dtype: 'u32' });
				const positions = make({ shape: [g.T], dtype: 'u32' });
				const stream = make({ shape: [g.count * g.T, C], dtype: 'f32' });
				const acts = makeAll(layerSpecs(config, dims));
				const xa = makeAll(loraActSpecs(dims, model.lora?.config));
				const padded = new Uint32Array(g.count * g.T);
				const lens = new Uint32Array(g.count);
				for (let i = 0; i < g.count; i++) {
					padded.set(prompts[g.start + i], i * g.T);
					lens[i] = prompts[g.start + i].length;
				}
				writeTensor(ids, padded);
				writeTensor(lengths, lens);
				writeTensor(
					positions,
					Uint32Array.from({ length: g.T }, (_, t) => t)
				);
				const ctx: LayerContext = {
					config,
					B: g.count,
					T: g.T,
					lengths,
					positions,
					invFreq: model.invFreq,
					attentionScaling: model.attentionScaling,
					lora: model.lora
				};
				// Where each prompt's rows go: its keys and values [T, W] to its sequence's cache
				// slots 0..n-1, its last hidden state to its row of the decode batch.
				const kvSpans = uploadRowSpans(
					gpu,
					Array.from(lens, (n, i) => ({ src: i * g.T, dst: (g.start + i) * session.S, rows: n })),
					g.count * g.T,
					session.B * session.S
				);
				const lastSpans = uploadRowSpans(
					gpu,
					Array.from(lens, (n, i) => ({ src: i * g.T + n - 1, dst: g.start + i, rows: 1 })),
					g.count * g.T,
					session.B
				);
				owned.push(kvSpans.tensor, lastSpans.tensor);
				const kvWidth = config.numKvHeads * config.headDim;
				const pending: Promise<void>[] = [];
				let rec = new Recorder(gpu, this.#pool);
				embeddingForward(rec, { ids, weight: weights.embed, out: stream });
				const { cache } = session;
				for (let l = 0; l < config.numLayers; l++) {
					layerForward(rec, ctx, l, weights.layers[l], stream, acts, xa);
					copyRowSpans(rec, { src: acts.k, dst: cache.k[l], width: kvWidth, spans: kvSpans });
					copyRowSpans(rec, { src: acts.v, dst: cache.v[l], width: kvWidth, spans: kvSpans });
					// One command buffer per layer, at most two in flight (as transformer.ts).
					pending.push(rec.submit());
					rec = new Recorder(gpu, this.#pool);
					while (pending.length > 1) await pending.shift();
					if (signal?.aborted) {
						// what was submitted reads the group's buffers: let it finish before they go
						await Promise.all(pending);
						signal.throwIfAborted();
					}
				}
				copyRowSpans(rec, { src: stream, dst: session.x, width: C, spans: lastSpans });
				pending.push(rec.submit());
				await Promise.all(pending);
			} finally {
				for (const t of owned) t.release();
			}
		}
		this.#pool.trim();
	}

	#checkLive(): void {
		if (this.#released) throw new Error('Generator: used after release()');
	}
}
