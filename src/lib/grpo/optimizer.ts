/**
 * @file AdamW over a model's LoRA parameters with ART's defaults (lr 5e-6, betas 0.9 /
 * 0.99, weight decay 0.1, max grad norm 0.1, constant schedule; eps 1e-8), m and v in f32
 * where ART pages 8-bit. The update is gpu/kernels/adamw.ts; this owns the stats tensor,
 * the step count and AdamW's update count t (equal unless a step makes several updates),
 * neither of which advances when the kernel skips a non-finite gradient.
 */
import type { Gpu } from '../gpu/device';
import { run } from '../gpu/kernel';
import { adamwStep, GRAD_NORM_STATS, readGradNormStats } from '../gpu/kernels/adamw';
import { createTensor, type Tensor } from '../gpu/tensor';
import type { LoraParameters } from '../model/transformer/lora';
import { GrpoConfigError } from './errors';

export interface OptimizerConfig {
	lr: number;
	beta1: number;
	beta2: number;
	eps: number;
	weightDecay: number;
	/** Clip the global gradient norm to this; undefined: no clipping. */
	maxGradNorm: number | undefined;
}

/** ART's AdamW settings (see the file comment for the sources). */
export const ART_OPTIMIZER_DEFAULTS: Readonly<OptimizerConfig> = Object.freeze({
	lr: 5e-6,
	beta1: 0.9,
	beta2: 0.99,
	eps: 1e-8,
	weightDecay: 0.1,
	maxGradNorm: 0.1
});

export interface OptimizerStepResult {
	/** The step count after this call (unchanged when skipped). */
	step: number;
	/** AdamW's update count t after this call (unchanged when skipped). */
	updates: number;
	lr: number;
	/** Global L2 norm of the gradients before clipping. */
	gradNorm: number;
	/** Factor the clip applied (1: no clipping). */
	gradScale: number;
	/** The norm was not finite and nothing changed. */
	skipped: boolean;
}

export class LoraOptimizer {
	readonly config: Readonly<OptimizerConfig>;
	readonly #stats: Tensor<'f32'>;
	#step = 0;
	#updates = 0;

	constructor(
		readonly gpu: Gpu,
		readonly lora: LoraParameters,
		config: Partial<OptimizerConfig> = {}
	) {
		const c = { ...ART_OPTIMIZER_DEFAULTS, ...config };
		if (c.maxGradNorm !== undefined && !(c.maxGradNorm > 0 && Number.isFinite(c.maxGradNorm)))
			throw new GrpoConfigError(`maxGradNorm must be a positive number; got ${c.maxGradNorm}.`);
		this.config = Object.freeze(c);
		this.#stats = createTensor(gpu, [GRAD_NORM_STATS.length], 'f32');
	}

	/** Training steps taken (a step may make several updates). */
	get step(): number {
		return this.#step;
	}

	/** AdamW updates made (its t after the last one): the bias correction's count. */
	get updates(): number {
		return this.#updates;
	}

	/** Sets the counts (resuming from a checkpoint whose m and v were restored); `updates`
	 * defaults to `step` (one update a step, as every checkpoint without the count). */
	restoreStep(step: number, updates = step): void {
		for (const [name, n] of [
			['step', step],
			['updates', updates]
		] as const)
			if (!(Number.isInteger(n) && n >= 0))
				throw new GrpoConfigError(`${name} must be an integer >= 0; got ${n}.`);
		this.#step = step;
		this.#updates = updates;
	}

	/** One AdamW update on the gradients the LoRA tensors hold now; `lr` overrides the
	 * configured rate (a schedule); `sameStep`: a further update of the step already
	 * counted (the step count stays). Waits for the GPU to read the stats. */
	async apply(options: { lr?: number; sameStep?: boolean } = {}): Promise<OptimizerStepResult> {
		const c = this.config;
		const lr = options.lr ?? c.lr;
		const t = this.#updates + 1;
		await run(this.gpu, (rec) =>
			adamwStep(rec, {
				slots: this.lora.slots(),
				stats: this.#stats,
				lr,
				beta1: c.beta1,
				beta2: c.beta2,
				eps: c.eps,
				weightDecay: c.weightDecay,
				maxNorm: c.maxGradNorm,
				step: t
			})
		);
		this.lora.changed();
		const s = await readGradNormStats(this.#stats);
		if (!s.skipped) {
			this.#updates = t;
			if (!options.sameStep) this.#step++;
		}
		return {
			step: this.#step,
			updates: this.#updates,
			lr,
			gradNorm: s.norm,
			gradScale: s.scale,
			skipped: s.skipped
		};
	}

	release(): void {
		this.#stats.release();
	}
}
