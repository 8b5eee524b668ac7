/**
 * @file One optimizer step on a model's LoRA adapters, GRPO (`grpoStep`) or SFT: zero
 * advantages dropped (as ART), pack into micro-batches, the step's normaliser, per
 * micro-batch [reference logprobs, LoRA off, when klBeta > 0] and forwardBackward with
 * lossAndGrad, then clipped AdamW. Nothing to learn: `{ skipped: 'no-signal' }` before any
 * GPU work; a non-finite gradient: `{ skipped: 'non-finite-grad' }`, state untouched.
 */
import type { TransformerModel } from '../model/transformer/transformer';
import { GrpoConfigError } from './errors';
import { lossAndGrad } from './losses';
import { resolveLossConfig, type LossConfig } from './loss-config';
import { planNormaliser } from './loss-normaliser';
import { addTotals, emptyTotals, summarizeTotals, type LossMetrics } from './loss-totals';
import type { LoraOptimizer, OptimizerStepResult } from './optimizer';
import { packSequences, trainedTokenCounts, type PackResult, type TrainSequence } from './pack';
import { sftLossAndGrad } from './sft';

export interface StepOptions {
	/** Longest sequence trained; longer ones are dropped with a warning. Default: the
	 * model's max_position_embeddings. */
	maxSeqLen?: number;
	/** Padded tokens (B x T) per micro-batch; default: one micro-batch. */
	tokenBudget?: number;
	/** Rows per micro-batch at most. */
	maxRows?: number;
	/** The sampling temperature the rollout logprobs were taken at (default 1). */
	temperature?: number;
	/** This step's learning rate (a schedule); default: the optimizer's. */
	lr?: number;
	/**
	 * Called after each micro-batch's forward and backward (`done` of `total`): the update's
	 * progress, for a page that would otherwise wait in silence. Same-process only.
	 */
	onMicroBatch?: (done: number, total: number) => void;
}

export type GrpoStepConfig = LossConfig & StepOptions;

export interface StepTimes {
	/** Scoring the reference (LoRA off), all micro-batches. */
	referenceMs: number;
	forwardBackwardMs: number;
	optimizerMs: number;
	totalMs: number;
}

export interface StepCounts {
	/** Sequences given. */
	sequences: number;
	/** Dropped for an advantage of 0 (GRPO only). */
	droppedZeroAdvantage: number;
	/** Dropped for being longer than maxSeqLen. */
	droppedTooLong: number;
	/** Dropped with no trained token. */
	droppedUntrained: number;
	/** All of the above. */
	sequencesDropped: number;
	microBatches: number;
}

export interface GrpoStepMetrics extends LossMetrics, StepCounts {
	gradNorm: number;
	gradScale: number;
	lr: number;
	/** The optimizer's step count afterwards. */
	step: number;
	times: StepTimes;
}

/** A step's outcome: skipped (no signal, or a non-finite gradient left unapplied) or applied. */
export type StepResult<Metrics> =
	| { skipped: 'no-signal'; counts: StepCounts; warnings: string[] }
	| {
			skipped: 'non-finite-grad';
			counts: StepCounts;
			warnings: string[];
			optimizer: OptimizerStepResult;
	  }
	| { skipped?: undefined; metrics: Metrics; warnings: string[] };

export type GrpoStepResult = StepResult<GrpoStepMetrics>;

const now = () => performance.now();

function packFor(
	model: TransformerModel,
	sequences: readonly TrainSequence[],
	options: StepOptions,
	requireLogprobs: boolean
): PackResult {
	if (!model.lora)
		throw new GrpoConfigError(
			'the model has no LoRA adapters to train: create it with a `lora` option.'
		);
	return packSequences(sequences, {
		maxSeqLen: options.maxSeqLen ?? model.config.maxPositionEmbeddings,
		tokenBudget: options.tokenBudget,
		maxRows: options.maxRows,
		requireLogprobs
	});
}

function countDrops(sequences: number, zeroAdvantage: number, pack: PackResult): StepCounts {
	const tooLong = pack.dropped.filter((d) => d.reason === 'too-long').length;
	const untrained = pack.dropped.length - tooLong;
	return {
		sequences,
		droppedZeroAdvantage: zeroAdvantage,
		droppedTooLong: tooLong,
		droppedUntrained: untrained,
		sequencesDropped: zeroAdvantage + pack.dropped.length,
		microBatches: pack.microBatches.length
	};
}

/** One GRPO step (see the file comment). */
export async function grpoStep(
	model: TransformerModel,
	optimizer: LoraOptimizer,
	sequences: readonly TrainSequence[],
	config: GrpoStepConfig = {}
): Promise<GrpoStepResult> {
	const start = now();
	const lossConfig = resolveLossConfig(config);
	const withSignal = sequences.filter((s) => s.advantage !== 0);
	const pack = packFor(model, withSignal, config, !lossConfig.allowMissingLogprobs);
	const counts = countDrops(sequences.length, sequences.length - withSignal.length, pack);
	const warnings = pack.warnings;
	if (pack.microBatches.length === 0) return { skipped: 'no-signal', counts, warnings };

	const norm = planNormaliser(trainedTokenCounts(pack), lossConfig);
	const { temperature } = config;
	let totals = emptyTotals();
	let referenceMs = 0;
	let forwardBackwardMs = 0;
	for (const [i, mb] of pack.microBatches.entries()) {
		let refLogprobs: Float32Array | undefined;
		if (lossConfig.klBeta > 0) {
			const t = now();
			refLogprobs = (await model.scoreTokens(mb.tokens, { lora: false, temperature })).logprobs;
			referenceMs += now() - t;
		}
		const t = now();
		await model.forwardBackward(
			mb.tokens,
			(logprobs) => {
				const r = lossAndGrad({ ...mb, logprobs, refLogprobs }, lossConfig, norm);
				totals = addTotals(totals, r.totals);
				return r.dLogprobs;
			},
			{ accumulate: i > 0, temperature }
		);
		forwardBackwardMs += now() - t;
		config.onMicroBatch?.(i + 1, pack.microBatches.length);
	}
	const t = now();
	const opt = await optimizer.apply({ lr: config.lr });
	const optimizerMs = now() - t;
	if (opt.skipped) return { skipped: 'non-finite-grad', counts, warnings, optimizer: opt };
	return {
		metrics: {
			...summarizeTotals(totals),
			...counts,
			gradNorm: opt.gradNorm,
			gradScale: opt.gradScale,
			lr: opt.lr,
			step: opt.step,
			times: { referenceMs, forwardBackwardMs, optimizerMs, totalMs: now() - start }
		},
		warnings
	};
}

export interface SftStepMetrics extends StepCounts {
	/** Mean negative logprob of the trained tokens (before the update). */
	loss: number;
	tokens: number;
	gradNorm: number;
	gradScale: number;
	lr: number;
	step: number;
	times: Omit<StepTimes, 'referenceMs'>;
}

export type SftStepResult = StepResult<SftStepMetrics>;

/** One SFT step: the mean negative logprob of the trained tokens of all sequences
 * (their advantages and rollout logprobs are ignored). */
export async function sftStep(
	model: TransformerModel,
	optimizer: LoraOptimizer,
	sequences: readonly TrainSequence[],
	options: StepOptions = {}
): Promise<SftStepResult> {
	const start = now();
	const pack = packFor(model, sequences, options, false);
	const counts = countDrops(sequences.length, 0, pack);
	const warnings = pack.warnings;
	if (pack.microBatches.length === 0) return { skipped: 'no-signal', counts, warnings };
	const N = trainedTokenCounts(pack).reduce((s, n) => s + n, 0);
	let loss = 0;
	const t = now();
	for (const [i, mb] of pack.microBatches.entries())
		await model.forwardBackward(
			mb.tokens,
			(logprobs) => {
				const r = sftLossAndGrad({ B: mb.B, logprobs, mask: mb.mask }, N);
				loss += r.loss;
				return r.dLogprobs;
			},
			{ accumulate: i > 0, temperature: options.temperature }
		);
	const forwardBackwardMs = now() - t;
	const t2 = now();
	const opt = await optimizer.apply({ lr: options.lr });
	const optimizerMs = now() - t2;
	if (opt.skipped) return { skipped: 'non-finite-grad', counts, warnings, optimizer: opt };
	return {
		metrics: {
			...counts,
			loss,
			tokens: N,
			gradNorm: opt.gradNorm,
			gradScale: opt.gradScale,
			lr: opt.lr,
			step: opt.step,
			times: { forwardBackwardMs, optimizerMs, totalMs: now() - start }
		},
		warnings
	};
}
