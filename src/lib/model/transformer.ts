/**
 * @file A decoder-only transformer (Llama, Qwen2, Qwen3) on the GPU: per-token
 * log-probabilities of given tokens for a right-padded batch, and the backward pass of
 * any loss given per token (dLoss/dlogprob) into the LoRA parameters.
 *
 *   const model = await TransformerModel.create(gpu, config, source, { lora: {}, seed: 1 });
 *   const { logprobs } = await model.scoreTokens([[1, 2, 3], [4, 5]]);  // [B, T - 1]
 *   await model.forwardBackward(batch, (logprobs) => dLossDLogprobs);   // LoRA grads
 *
 * Layout: tokens are rows, N = B * T (b outer), hidden states [N, C]; q [B, T, Hq, D].
 * logprobs[b, t] = log p(ids[b, t + 1] | ids[b, <= t]), NaN where t + 1 >= lengths[b].
 *
 * Activation memory (see memory.ts for the bytes): the training forward keeps only each
 * layer's input (the residual stream, (L + 1) x [N, C]); the backward recomputes each
 * layer's forward from it, with the same kernels on the same inputs, so the recomputed
 * activations are bit-identical to the forward's, then runs the layer's backward. That
 * costs one extra forward of the layers (~1/3 more work) and saves ~L - 1 layers' worth
 * of activations (gate, up and SwiGLU output dominate: 3 x [N, I]).
 *
 * Buffers of a call come from a BufferPool and go back to it afterwards, so repeated calls
 * on one batch shape allocate nothing; a call on another shape trims the pool first.
 *
 * Submission: one command buffer per layer; each is submitted while the previous one runs,
 * and recording waits for the layer before that, so a long batch never sits in one huge
 * command buffer and at most two layers' scratch buffers are alive at once (scratch.ts).
 *
 * LoRA off (`{ lora: false }` per call) runs the base weights: the reference policy of a
 * KL penalty, at no extra memory. Dropout is not supported (0 only).
 */
import { BufferPool } from '../gpu/pool';
import type { Gpu } from '../gpu/device';
import { ShapeMismatchError } from '../gpu/errors';
import { Recorder } from '../gpu/kernel';
import { embeddingForward } from '../gpu/kernels/embedding';
import { logSoftmaxGatherBackward, logSoftmaxGatherForward } from '../gpu/kernels/logsoftmax';
import { rmsNormBackward, rmsNormForward } from '../gpu/kernels/rmsnorm';
import { readTensor, uploadTensor, writeTensor, type Tensor } from '../gpu/tensor';
import {
	fromTargetGrid,
	nextTokenTargets,
	toTargetGrid,
	toTokenBatch,
	type TokenBatch,
	type TokenBatchInput
} from './batch';
import { ropeInvFreq } from './config';
import { LoraConfigError } from './errors';
import { layerBackward, layerForward, type LayerContext, type LoraActs } from './layer';
import { LoraParameters, resolveLoraConfig, type LoraConfig } from './lora';
import { checkModelMemory, estimateModelMemory, type MemoryEstimate } from './memory';
import type { ModelConfig, WeightSource } from './types';
import { uploadWeights, type ModelWeights } from './weights';
import { planWeightDtypes, type WeightDtypePolicy } from './weight-dtype';
import {
	allocate,
	backwardSpecs,
	headSpecs,
	inputSpecs,
	layerSpecs,
	layerStateSpecs,
	loraActSpecs,
	pooledBytes,
	releaseAll,
	specList,
	streamSpecs,
	x2Spec,
	type Mode
} from './workspace';

export interface TransformerOptions {
	/** LoRA adapters to create (defaults filled in: r 8, alpha 16, all 7 projections);
	 * omitted: no adapters (scoring only). */
	lora?: Partial<LoraConfig>;
	/** Seeds LoRA A's initialisation. */
	seed?: number;
	/** Total GPU memory the model may use (WebGPU does not report it); calls whose
	 * estimate exceeds it are refused before anything is allocated. */
	memoryBudgetBytes?: number;
	/** Training activations: 'recompute' keeps only each layer's input and recomputes the
	 * layer's forward in the backward (least memory); 'keep' keeps every layer's activations
	 * (no recompute: about a quarter less work, and the memory PyTorch's eager mode uses);
	 * 'auto' (default) keeps them when the estimate with them fits in `memoryBudgetBytes`,
	 * and recomputes when no budget is given (WebGPU cannot say how much memory there is). */
	activations?: ActivationPolicy;
	/** Largest chunk of the embedding / lm_head (tests force chunking with it). */
	maxChunkBytes?: number;
	/** Dtype of the projections, embedding and lm_head on the GPU (weight-dtype.ts): 'auto'
	 * (default) keeps f16 / bf16 checkpoints in f16 where that is exact or within 1e-3,
	 * 'f16' forces f16, 'f32' widens. Norms and biases are f32 always. */
	weightDtype?: WeightDtypePolicy;
	/** Weight upload progress (bytes done, total). */
	onProgress?(doneBytes: number, totalBytes: number): void;
}

export type ActivationPolicy = 'auto' | 'keep' | 'recompute';

export interface CallOptions {
	/** Use the LoRA adapters (default true when the model has them); false: base model. */
	lora?: boolean;
	/** Divides the logits, as sampling at that temperature did; default 1. */
	temperature?: number;
}

export interface ScoreResult {
	B: number;
	T: number;
	/** [B, T - 1]: log p(ids[b, t + 1] | ids[b, <= t]); NaN past each sequence's end. */
	logprobs: Float32Array;
}

/** dLoss/dlogprobs [B, T - 1] (entries with no target are ignored), or a function of the
 * forward's logprobs that returns it (one forward serves both the loss and the backward). */
export type LogprobGrad =
	ArrayLike<number> | ((logprobs: Float32Array) => ArrayLike<number> | Promise<ArrayLike<number>>);

export interface BackwardOptions extends Omit<CallOptions, 'lora'> {
	/** Add into the LoRA gradients (micro-batch accumulation) instead of overwriting them. */
	accumulate?: boolean;
	/** This call's activation policy (default: the model's `activations`). */
	activations?: ActivationPolicy;
}

/**
 * Runs work layer by layer: one submit per flush, never waiting for the GPU until `done`.
 * A recorder gives its scratch back to the pool at submit (kernel.ts Recorder), so the
 * next layer reuses the same buffers and the scratch never piles up over the layers; and
 * the host records layer i+1 while the GPU runs layer i. (An earlier version waited for
 * the layer before at each flush, to bound scratch that was freed only when the GPU was
 * done: on the H200 that wait cost more than the GPU work.)
 */
class Submitter {
	#rec: Recorder;
	readonly #pending: Promise<void>[] = [];
	constructor(
		readonly gpu: Gpu,
		readonly pool: BufferPool
	) {
		this.#rec = new Recorder(gpu, pool);
	}
	get rec(): Recorder {
		return this.#rec;
	}
	flush(): void {
		this.#pending.push(this.#rec.submit());
		this.#rec = new Recorder(this.gpu, this.pool);
	}
	async done(): Promise<void> {
		this.flush();
		await Promise.all(this.#pending.splice(0));
	}
}

export class TransformerModel {
	readonly #pool: BufferPool;
	/** B x T of the last call: the pool keeps that call's buffers for the next one. */
	#lastBatchShape = '';
	#released = false;

	private constructor(
		readonly gpu: Gpu,
		readonly config: ModelConfig,
		readonly weights: ModelWeights,
		readonly lora: LoraParameters | undefined,
		readonly invFreq: Tensor<'f32'>,
		readonly attentionScaling: number,
		readonly memoryBudgetBytes: number | undefined,
		readonly activations: ActivationPolicy
	) {
		this.#pool = new BufferPool(gpu);
	}

	/** Checks memory, uploads the weights, creates the adapters. */
	static async create(
		gpu: Gpu,
		config: ModelConfig,
		source: WeightSource,
		options: TransformerOptions = {}
	): Promise<TransformerModel> {
		const loraConfig = options.lora ? resolveLoraConfig(options.lora) : undefined;
		const estimate = estimateModelMemory(config, {
			lora: loraConfig,
			limits: gpu.limits,
			weightDtype: planWeightDtypes(config, options.weightDtype, source.list())
		});
		checkModelMemory(estimate, gpu.limits, options.memoryBudgetBytes, describeModel(config));
		const rope = ropeInvFreq(config);
		const weights = await uploadWeights(gpu, config, source, options);
		let lora: LoraParameters | undefined;
		let invFreq: Tensor<'f32'> | undefined;
		try {
			lora = loraConfig ? LoraParameters.create(gpu, config, loraConfig, options.seed) : undefined;
			invFreq = uploadTensor(gpu, rope.invFreq, [rope.invFreq.length], 'f32');
		} catch (error) {
			weights.release();
			lora?.release();
			throw error;
		}
		return new TransformerModel(
			gpu,
			config,
			weights,
			lora,
			invFreq,
			rope.attentionScaling,
			options.memoryBudgetBytes,
			options.activations ?? 'auto'
		);
	}

	/** The itemised memory estimate of a call on a batch of B sequences of T tokens
	 * (`keepActivations`: a training call that keeps every layer's activations). */
	estimateMemory(B: number, T: number, mode: Mode, keepActivations = false): MemoryEstimate {
		const dims = { B, T };
		const keep = mode === 'train' && keepActivations;
		const e = estimateModelMemory(this.config, {
			lora: this.lora?.config,
			batch: dims,
			mode,
			keepActivations: keep,
			limits: this.gpu.limits,
			weightChunkRows: this.weights.lmHead.chunks[0]?.rows,
			weightDtype: this.weights.dtypes
		});
		// The pool keeps the last call's buffers for a call of the same shape: a scoring call
		// after a training one still holds the backward's buffers and the checkpoints.
		if (`${B}x${T}` !== this.#lastBatchShape) return e;
		const { liveBytes, freeBytes } = this.#pool.stats;
		const layerState = layerStateSpecs(this.config, dims, this.lora?.config, keep);
		const used = [
			...specList(inputSpecs(dims)),
			...streamSpecs(this.config, dims, mode),
			...Array.from({ length: keep ? this.config.numLayers : 1 }, () => layerState).flat(),
			...specList(headSpecs(this.config, dims)),
			...(mode === 'train' ? specList(backwardSpecs(this.config, dims)) : [])
		].reduce((s, spec) => s + pooledBytes(spec), 0);
		const kept = liveBytes + freeBytes - used;
		if (kept <= 0) return e;
		const lines = [
			...e.lines,
			{ what: 'buffers the pool keeps from earlier calls', bytes: kept, largestBuffer: 0 }
		];
		return { lines, totalBytes: e.totalBytes + kept };
	}

	/** Per-token log-probabilities of each sequence's own next tokens. */
	async scoreTokens(input: TokenBatchInput, options: CallOptions = {}): Promise<ScoreResult> {
		this.#checkLive();
		const batch = toTokenBatch(input);
		const useLora = options.lora ?? true;
		const run = await this.#begin(batch, 'score', useLora, false);
		try {
			const sub = new Submitter(this.gpu, this.#pool);
			const stream = run.streams[0];
			embeddingForward(sub.rec, { ids: run.inputs.ids, weight: this.weights.embed, out: stream });
			const { acts, xa } = run.layers[0];
			for (let i = 0; i < this.config.numLayers; i++) {
				layerForward(sub.rec, run.ctx, i, this.weights.layers[i], stream, acts, xa);
				sub.flush();
			}
			this.#head(sub.rec, run, stream, options.temperature);
			await sub.done();
			const perPosition = await readTensor(run.head.logprobs);
			return { B: batch.B, T: batch.T, logprobs: toTargetGrid(batch, perPosition) };
		} finally {
			run.release();
		}
	}

	/**
	 * Forward with the adapters, then the backward of sum(dLogprobs * logprobs) into every
	 * adapter's dA and dB (overwritten, or added with `accumulate`). Returns the forward's
	 * logprobs [B, T - 1].
	 */
	async forwardBackward(
		input: TokenBatchInput,
		grad: LogprobGrad,
		options: BackwardOptions = {}
	): Promise<ScoreResult> {
		this.#checkLive();
		if (!this.lora)
			throw new LoraConfigError(
				'forwardBackward trains LoRA adapters, and this model has none: create it with a `lora` option.'
			);
		const batch = toTokenBatch(input);
		// A given array is checked before any work; a function's result after the forward.
		const given = typeof grad === 'function' ? undefined : fromTargetGrid(batch, grad, 'dLogprobs');
		const { config, weights } = this;
		const L = config.numLayers;
		const keep = this.activationPlan(batch.B, batch.T, options.activations) === 'keep';
		const run = await this.#begin(batch, 'train', true, keep);
		try {
			const bw = allocate(this.#pool, backwardSpecs(config, batch));
			run.owned.push(bw);
			const ckpt = run.streams;
			const bytes = batch.B * batch.T * config.hiddenSize * 4;

			// Forward, keeping each layer's input.
			const sub = new Submitter(this.gpu, this.#pool);
			embeddingForward(sub.rec, { ids: run.inputs.ids, weight: weights.embed, out: ckpt[0] });
			for (let i = 0; i < L; i++) {
				sub.rec.copy(ckpt[i].buffer, 0, ckpt[i + 1].buffer, 0, bytes);
				const { acts, xa, x2 } = run.layers[keep ? i : 0];
				layerForward(sub.rec, run.ctx, i, weights.layers[i], ckpt[i + 1], acts, xa, {
					saveX2: x2
				});
				sub.flush();
			}
			this.#head(sub.rec, run, ckpt[L], options.temperature);
			await sub.done();
			const logprobs = toTargetGrid(batch, await readTensor(run.head.logprobs));
			const g =
				given ??
				fromTargetGrid(
					batch,
					await (grad as Exclude<LogprobGrad, ArrayLike<number>>)(logprobs.slice()),
					'dLogprobs'
				);
			writeTensor(bw.g, g);

			// Backward: head, then every layer from the top, each recomputed from its input.
			logSoftmaxGatherBackward(sub.rec, {
				h: run.head.hf,
				weight: weights.lmHead,
				targets: run.inputs.targets,
				temperature: options.temperature,
				g: bw.g,
				lse: run.head.lseF,
				dh: bw.dh
			});
			rmsNormBackward(sub.rec, {
				dy: bw.dh,
				x: ckpt[L],
				weight: weights.finalNorm,
				rstd: run.head.rstdF,
				dx: bw.dS
			});
			for (let i = L - 1; i >= 0; i--) {
				const { acts, xa, x2 } = run.layers[keep ? i : 0];
				if (!keep) {
					sub.rec.copy(ckpt[i].buffer, 0, bw.x2.buffer, 0, bytes);
					layerForward(sub.rec, run.ctx, i, weights.layers[i], bw.x2, acts, xa, {
						stopAfterMlpInput: true
					});
				}
				layerBackward(sub.rec, run.ctx, {
					layer: i,
					w: weights.layers[i],
					x: ckpt[i],
					x2: x2 ?? bw.x2,
					acts,
					xa,
					bw,
					needDx: i > 0,
					accumulate: options.accumulate ?? false
				});
				sub.flush();
			}
			await sub.done();
			return { B: batch.B, T: batch.T, logprobs };
		} finally {
			run.release();
		}
	}

	/** Destroys the buffers the pool keeps between calls (they serve the next call of the
	 * same batch shape): memory back after a large call. */
	trimPool(): void {
		this.#pool.trim();
	}

	/** Frees the weights, the adapters and the pooled buffers. */
	release(): void {
		if (this.#released) return;
		this.#released = true;
		this.weights.release();
		this.lora?.release();
		this.invFreq.release();
		this.#pool.trim();
	}

	/** What a training call on B x T does with the layers' activations (see `activations`). */
	activationPlan(
		B: number,
		T: number,
		policy: ActivationPolicy = this.activations
	): 'keep' | 'recompute' {
		if (policy !== 'auto') return policy;
		const budget = this.memoryBudgetBytes;
		const fits =
			budget !== undefined && this.estimateMemory(B, T, 'train', true).totalBytes <= budget;
		return fits ? 'keep' : 'recompute';
	}

	#checkLive(): void {
		if (this.#released) throw new Error('TransformerModel: used after release()');
	}

	/** Final norm and the log-probabilities of the next tokens. */
	#head(rec: Recorder, run: Run, x: Tensor, temperature?: number): void {
		const { hf, rstdF, logprobs, lseF } = run.head;
		const eps = this.config.rmsNormEps;
		rmsNormForward(rec, { x, weight: this.weights.finalNorm, y: hf, rstd: rstdF, eps });
		logSoftmaxGatherForward(rec, {
			h: hf,
			weight: this.weights.lmHead,
			targets: run.inputs.targets,
			temperature,
			logprobs,
			lse: lseF
		});
	}

	/** Checks memory, uploads the batch and allocates one call's buffers. */
	async #begin(batch: TokenBatch, mode: Mode, useLora: boolean, keep: boolean): Promise<Run> {
		const { config } = this;
		const dims = { B: batch.B, T: batch.T };
		for (let i = 0; i < batch.ids.length; i++)
			if (batch.ids[i] >= config.vocabSize)
				throw new ShapeMismatchError(
					`token id ${batch.ids[i]} at [${Math.floor(i / batch.T)}, ${i % batch.T}] is outside ` +
						`the vocabulary [0, ${config.vocabSize}); check that the tokenizer belongs to this model`
				);
		// The previous call's buffers return to the pool once the queue is idle (before the
		// estimate, which counts what the pool keeps).
		await this.gpu.device.queue.onSubmittedWorkDone();
		const estimate = this.estimateMemory(batch.B, batch.T, mode, keep);
		checkModelMemory(
			estimate,
			this.gpu.limits,
			this.memoryBudgetBytes,
			`${describeModel(config)} on a batch of ${batch.B} x ${batch.T} tokens (${mode}` +
				`${keep ? ', keeping every layer\u2019s activations' : ''})`
		);
		// Buffers parked in the pool serve the next call of the same B x T (scoring and
		// training share size classes); another shape gets fresh ones, and the parked ones
		// are dropped so the pool never holds more than one batch shape's worth.
		const shape = `${batch.B}x${batch.T}`;
		if (shape !== this.#lastBatchShape) this.#pool.trim();
		this.#lastBatchShape = shape;
		const lora = useLora ? this.lora : undefined;
		const owned: (Record<string, Tensor | undefined> | Tensor[])[] = [];
		try {
			const inputs = allocate(this.#pool, inputSpecs(dims));
			owned.push(inputs);
			writeTensor(inputs.ids, batch.ids);
			writeTensor(inputs.lengths, batch.lengths);
			writeTensor(
				inputs.positions,
				Uint32Array.from({ length: batch.T }, (_, t) => t)
			);
			writeTensor(inputs.targets, nextTokenTargets(batch));
			const streams = streamSpecs(config, dims, mode).map((s) =>
				this.#pool.tensor(s.shape, s.dtype)
			);
			owned.push(streams);
			const layers: LayerState[] = [];
			for (let i = 0; i < (keep ? config.numLayers : 1); i++) {
				const acts = allocate(this.#pool, layerSpecs(config, dims));
				owned.push(acts);
				const xa = allocate(this.#pool, loraActSpecs(dims, lora?.config)) as LoraActs;
				owned.push(xa);
				const x2 = keep ? allocate(this.#pool, { x2: x2Spec(config, dims) }) : undefined;
				if (x2) owned.push(x2);
				layers.push({ acts, xa, x2: x2?.x2 });
			}
			const head = allocate(this.#pool, headSpecs(config, dims));
			owned.push(head);
			const ctx: LayerContext = {
				config,
				B: batch.B,
				T: batch.T,
				lengths: inputs.lengths,
				positions: inputs.positions,
				invFreq: this.invFreq,
				attentionScaling: this.attentionScaling,
				lora
			};
			return {
				ctx,
				inputs,
				streams,
				layers,
				head,
				owned,
				release: () => owned.forEach((o) => releaseAll(o))
			};
		} catch (error) {
			owned.forEach((o) => releaseAll(o));
			throw error;
		}
	}
}

interface LayerState {
	acts: ReturnType<typeof allocate<ReturnType<typeof layerSpecs>>>;
	xa: LoraActs;
	/** The stream after attention, when activations are kept. */
	x2?: Tensor;
}

interface Run {
	ctx: LayerContext;
	inputs: ReturnType<typeof allocate<ReturnType<typeof inputSpecs>>>;
	streams: Tensor[];
	/** One layer's activations reused by every layer, or one set per layer (kept). */
	layers: LayerState[];
	head: ReturnType<typeof allocate<ReturnType<typeof headSpecs>>>;
	owned: (Record<string, Tensor | undefined> | Tensor[])[];
	release(): void;
}

function describeModel(config: ModelConfig): string {
	return (
		`${config.architecture} (${config.numLayers} layers, hidden ${config.hiddenSize}, ` +
		`vocab ${config.vocabSize})`
	);
}
