/**
 * @file A decoder-only transformer (Llama, Qwen2, Qwen3) on the GPU: per-token logprobs of
 * a right-padded batch, logprobs[b, t] = log p(ids[b, t + 1] | ids[b, <= t]) ([B, T - 1],
 * NaN past lengths[b]), and the backward of any per-token loss into the LoRA parameters.
 * Training recomputes each layer's forward from its saved input (bit-identical), or keeps
 * activations where they fit. `{ lora: false }` runs the base: a KL reference. No dropout.
 * `prefix`: the rows continue shared prefixes, run once (shared-prefix.ts).
 */
import { BufferPool } from '../../gpu/pool';
import type { Gpu } from '../../gpu/device';
import { ShapeMismatchError } from '../../gpu/errors';
import { Recorder } from '../../gpu/kernel';
import { logSoftmaxGatherBackward, logSoftmaxGatherForward } from '../../gpu/kernels/logsoftmax';
import { rmsNormBackward, rmsNormForward } from '../../gpu/kernels/rmsnorm';
import { readTensor, uploadTensor, writeTensor, type Tensor } from '../../gpu/tensor';
import {
	fromTargetGrid,
	toTargetGrid,
	toTokenBatch,
	type TokenBatch,
	type TokenBatchInput
} from './batch';
import { allocateCall, allocatePrefixedCall, type CallBuffers } from './call-buffers';
import { prefixAttentionSpecs, toSharedPrefix, type SharedPrefix } from './shared-prefix';
import { layerBackwardPass, prefixForward, scoreForward, Submitter, trainForward } from './passes';
import { ropeInvFreq } from '../hf/config';
import { LoraConfigError } from '../errors';
import { LoraParameters, resolveLoraConfig } from './lora';
import { checkModelMemory, estimateModelMemory, type MemoryEstimate } from './memory';
import type {
	ActivationPolicy,
	MergedWeights,
	BackwardOptions,
	CallOptions,
	LogprobGrad,
	ScoreResult,
	TransformerOptions
} from './transformer-options';
import type { ModelConfig, WeightSource } from '../types';
import { uploadWeights, type ModelWeights } from '../hf/weights';
import { planWeightDtypes } from '../hf/weight-dtype';
import { allocate, backwardSpecs, callSpecs, pooledBytes, type Mode } from './workspace';

export class TransformerModel {
	readonly #pool: BufferPool;
	/** B x T of the last call: the pool keeps that call's buffers for the next one. */
	#lastBatchShape = '';
	#merged: MergedWeights | undefined;
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
		const used = callSpecs(this.config, dims, this.lora?.config, mode, keep).reduce(
			(s, spec) => s + pooledBytes(spec),
			0
		);
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
		const prefix = options.prefix ? toSharedPrefix(options.prefix, batch.B) : undefined;
		const useLora = options.lora ?? true;
		const run = await this.#begin(batch, 'score', useLora, false, prefix);
		try {
			const sub = new Submitter(this.gpu, this.#pool);
			if (run.prefix) prefixForward(this, sub, run.prefix, false, false);
			scoreForward(this, sub, run);
			this.#head(sub.rec, run, run.streams[0], options.temperature);
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
		const prefix = options.prefix ? toSharedPrefix(options.prefix, batch.B) : undefined;
		// A given array is checked before any work; a function's result after the forward.
		const given = typeof grad === 'function' ? undefined : fromTargetGrid(batch, grad, 'dLogprobs');
		const { config, weights } = this;
		const L = config.numLayers;
		const keep = this.activationPlan(batch.B, batch.T, options.activations) === 'keep';
		const run = await this.#begin(batch, 'train', true, keep, prefix);
		try {
			if (this.#merged?.current) {
				run.ctx.merged = this.#merged.layers;
				if (run.prefix) run.prefix.run.ctx.merged = this.#merged.layers;
			}
			const bw = allocate(this.#pool, backwardSpecs(config, batch));
			run.owned.push(bw);
			const pre = run.prefix;
			const bwPrefix = pre && allocate(this.#pool, backwardSpecs(config, pre.run.ctx));
			if (bwPrefix) run.owned.push(bwPrefix);

			// Forward (the prefixes first: the rows read their keys and values), keeping each
			// layer's input.
			const sub = new Submitter(this.gpu, this.#pool);
			if (pre) prefixForward(this, sub, pre, true, keep);
			trainForward(this, sub, run, keep);
			this.#head(sub.rec, run, run.streams[L], options.temperature);
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
				x: run.streams[L],
				weight: weights.finalNorm,
				rstd: run.head.rstdF,
				dx: bw.dS
			});
			// The prefixes' positions score nothing: their stream's gradient starts at zero.
			if (bwPrefix) sub.rec.clear(bwPrefix.dS.buffer, 0, bwPrefix.dS.byteLength);
			const accumulate = options.accumulate ?? false;
			for (let i = L - 1; i >= 0; i--) {
				layerBackwardPass(this, sub, run, bw, i, keep, accumulate);
				// after the rows: their key and value gradients for the prefixes are summed
				if (pre && bwPrefix) layerBackwardPass(this, sub, pre.run, bwPrefix, i, keep, true);
				sub.flush();
			}
			await sub.done();
			return { B: batch.B, T: batch.T, logprobs };
		} finally {
			run.release();
		}
	}

	/**
	 * Projections with the adapter merged in (a Generator's copy, generate/merged-lora.ts):
	 * while they hold the adapter as it is, training uses them (x W'^T for x W^T + s (x A^T)
	 * B^T, dy W' for dy W + s (dy B) A: two products fewer a targeted projection, each way).
	 */
	useMergedWeights(merged: MergedWeights | undefined): void {
		this.#merged = merged;
	}

	get mergedWeights(): MergedWeights | undefined {
		return this.#merged;
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
	#head(rec: Recorder, run: CallBuffers, x: Tensor, temperature?: number): void {
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

	/** Checks memory, uploads the batch (and its shared prefixes) and allocates the call's
	 * buffers. */
	async #begin(
		batch: TokenBatch,
		mode: Mode,
		useLora: boolean,
		keep: boolean,
		prefix?: SharedPrefix
	): Promise<CallBuffers> {
		const { config } = this;
		for (const b of prefix ? [prefix.batch, batch] : [batch])
			for (let i = 0; i < b.ids.length; i++)
				if (b.ids[i] >= config.vocabSize)
					throw new ShapeMismatchError(
						`token id ${b.ids[i]} at [${Math.floor(i / b.T)}, ${i % b.T}] of the ` +
							`${b === batch ? 'batch' : 'shared prefixes'} is outside the vocabulary ` +
							`[0, ${config.vocabSize}); check that the tokenizer belongs to this model`
					);
		// The previous call's buffers return to the pool once the queue is idle (before the
		// estimate, which counts what the pool keeps).
		await this.gpu.device.queue.onSubmittedWorkDone();
		let estimate = this.estimateMemory(batch.B, batch.T, mode, keep);
		if (prefix) {
			const specs = [
				...callSpecs(config, prefix.batch, this.lora?.config, mode, keep),
				...prefixAttentionSpecs(config, batch, prefix.batch, mode)
			].map(pooledBytes);
			const bytes = specs.reduce((a, b) => a + b, 0);
			const what = `shared prefixes (${prefix.batch.B} x ${prefix.batch.T} tokens) and the rows' keys and values over them`;
			estimate = {
				lines: [...estimate.lines, { what, bytes, largestBuffer: Math.max(...specs) }],
				totalBytes: estimate.totalBytes + bytes
			};
		}
		const prefixNote = prefix
			? ` after ${prefix.batch.B} shared prefixes of ${prefix.batch.T}`
			: '';
		checkModelMemory(
			estimate,
			this.gpu.limits,
			this.memoryBudgetBytes,
			`${describeModel(config)} on a batch of ${batch.B} x ${batch.T} tokens${prefixNote} (${mode}` +
				`${keep ? ', keeping every layer\u2019s activations' : ''})`
		);
		// Buffers parked in the pool serve the next call of the same shapes (scoring and
		// training share size classes); other shapes get fresh ones, and the parked ones
		// are dropped so the pool never holds more than one call shape's worth.
		const shape = `${batch.B}x${batch.T}` + (prefix ? `+${prefix.batch.B}x${prefix.batch.T}` : '');
		if (shape !== this.#lastBatchShape) this.#pool.trim();
		this.#lastBatchShape = shape;
		const lora = useLora ? this.lora : undefined;
		if (!prefix) return allocateCall(this.#pool, this, batch, mode, lora, keep);
		return allocatePrefixedCall(this.gpu, this.#pool, this, batch, prefix, mode, lora, keep);
	}
}

function describeModel(config: ModelConfig): string {
	return (
		`${config.architecture} (${config.numLayers} layers, hidden ${config.hiddenSize}, ` +
		`vocab ${config.vocabSize})`
	);
}
