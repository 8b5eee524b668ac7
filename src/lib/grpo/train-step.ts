/**
 * @file One optimizer step on a model's LoRA adapters, GRPO (`grpoStep`) or SFT: zero
 * advantages dropped (as ART), pack into micro-batches, the step's normaliser, per
 * micro-batch [reference logprobs, LoRA off, when klBeta > 0] and forwardBackward with
 * lossAndGrad, then clipped AdamW (several updates a step: `iterations`, `miniBatches`).
 * Nothing to learn: `{ skipped: 'no-signal' }` before any GPU work; a non-finite gradient:
 * `{ skipped: 'non-finite-grad' }`, state untouched.
 */
import type { TransformerModel } from '../model/transformer/transformer';
import { GrpoConfigError } from './errors';
import { lossAndGrad } from './losses';
import { resolveLossConfig, type LossConfig } from './loss-config';
import { planNormaliser } from './loss-normaliser';
import {
	addTotals,
	emptyTotals,
	summarizeTotals,
	type LossMetrics,
	type LossTotals
} from './loss-totals';
import type { LoraOptimizer, OptimizerStepResult } from './optimizer';
import {
	packSequences,
	trainedTokenCounts,
	type PackedMicroBatch,
	type PackResult,
	type TrainSequence
} from './pack';
import { sftLossAndGrad } from './sft';

export interface StepOptions {
	/** Longest sequence trained; longer ones are dropped with a warning. Default: the
	 * model's max_position_embeddings. */
	maxSeqLen?: number;
	/** Padded tokens (B x T) per micro-batch; default: one micro-batch. */
	tokenBudget?: number;
	/** Rows per micro-batch at most. */
	maxRows?: number;
	/** Run the prefixes a micro-batch's sequences share (a system prompt) once (default
	 * true): the same logprobs and gradients for less work (pack.ts). */
	sharePrefixes?: boolean;
	/** The sampling temperature the rollout logprobs were taken at (default 1). */
	temperature?: number;
	/** This step's learning rate (a schedule); default: the optimizer's. */
	lr?: number;
	/**
	 * Passes over the step's games (TRL's num_iterations; default 1): each after the first
	 * trains on games the policy has moved away from, the ratio's clip bounding the move.
	 */
	iterations?: number;
	/**
	 * Optimizer updates per pass (default 1), each over a contiguous share of the games with
	 * a signal (PPO's mini-batches): more updates for the same forward and backward work.
	 */
	miniBatches?: number;
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
	/** AdamW updates the step made (iterations x miniBatches unless one was non-finite). */
	updates: number;
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
		requireLogprobs,
		sharePrefixes: options.sharePrefixes ?? true
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

/** The sequences in `parts` contiguous runs of near-equal size (fewer when there are fewer
 * sequences): a step's mini-batches, each whole groups where the sizes allow. */
function splitEvenly<T>(items: readonly T[], parts: number): T[][] {
	const n = Math.min(parts, items.length);
	return Array.from({ length: n }, (_, i) =>
		items.slice(Math.round((i * items.length) / n), Math.round(((i + 1) * items.length) / n))
	);
}

/** The most passes, or updates a pass, a step may make: `iterations`' and `miniBatches`' range
 * (recipes and `cli train` check the same). */
export const MAX_UPDATE_COUNT = 64;

export const isUpdateCount = (n: unknown): n is number =>
	Number.isInteger(n) && (n as number) >= 1 && (n as number) <= MAX_UPDATE_COUNT;

function checkUpdateCounts(config: StepOptions): { iterations: number; miniBatches: number } {
	const iterations = config.iterations ?? 1;
	const miniBatches = config.miniBatches ?? 1;
	for (const [name, n] of [
		['iterations', iterations],
		['miniBatches', miniBatches]
	] as const)
		if (!isUpdateCount(n))
			throw new GrpoConfigError(
				`${name} must be an integer from 1 to ${MAX_UPDATE_COUNT}; got ${n}.`
			);
	return { iterations, miniBatches };
}

/** One GRPO step (see the file comment): `iterations` x `miniBatches` optimizer updates. */
export async function grpoStep(
	model: TransformerModel,
	optimizer: LoraOptimizer,
	sequences: readonly TrainSequence[],
	config: GrpoStepConfig = {}
): Promise<GrpoStepResult> {
	const start = now();
	const lossConfig = resolveLossConfig(config);
	const { iterations, miniBatches } = checkUpdateCounts(config);
	const withSignal = sequences.filter((s) => s.advantage !== 0);
	const packs = splitEvenly(withSignal, miniBatches).map((part) =>
		packFor(model, part, config, !lossConfig.allowMissingLogprobs)
	);
	const all: PackResult = {
		microBatches: packs.flatMap((p) => p.microBatches),
		dropped: packs.flatMap((p) => p.dropped),
		warnings: [...new Set(packs.flatMap((p) => p.warnings))]
	};
	const counts = countDrops(sequences.length, sequences.length - withSignal.length, all);
	const warnings = all.warnings;
	if (all.microBatches.length === 0) return { skipped: 'no-signal', counts, warnings };

	const { temperature } = config;
	const total = iterations * all.microBatches.length;
	// the reference (LoRA off) does not change within the step: scored once per micro-batch
	const references = new Map<PackedMicroBatch, Float32Array>();
	let totals = emptyTotals();
	let firstPass = emptyTotals();
	let referenceMs = 0;
	let forwardBackwardMs = 0;
	let optimizerMs = 0;
	let done = 0;
	const applied: OptimizerStepResult[] = [];
	updates: for (let it = 0; it < iterations; it++)
		for (const pack of packs) {
			if (pack.microBatches.length === 0) continue;
			const norm = planNormaliser(trainedTokenCounts(pack), lossConfig);
			for (const [i, mb] of pack.microBatches.entries()) {
				let refLogprobs = references.get(mb);
				if (lossConfig.klBeta > 0 && !refLogprobs) {
					const t = now();
					refLogprobs = (
						await model.scoreTokens(mb.tokens, { lora: false, temperature, prefix: mb.prefix })
					).logprobs;
					references.set(mb, refLogprobs);
					referenceMs += now() - t;
				}
				const t = now();
				await model.forwardBackward(
					mb.tokens,
					(logprobs) => {
						const r = lossAndGrad({ ...mb, logprobs, refLogprobs }, lossConfig, norm);
						totals = addTotals(totals, r.totals);
						if (it === 0) firstPass = addTotals(firstPass, r.totals);
						return r.dLogprobs;
					},
					{ accumulate: i > 0, temperature, prefix: mb.prefix }
				);
				forwardBackwardMs += now() - t;
				config.onMicroBatch?.(++done, total);
			}
			const t = now();
			const opt = await optimizer.apply({ lr: config.lr, sameStep: applied.length > 0 });
			optimizerMs += now() - t;
			if (opt.skipped) {
				if (applied.length === 0)
					return { skipped: 'non-finite-grad', counts, warnings, optimizer: opt };
				// the step already changed the weights: keep it, stop its further updates
				warnings.push(
					`update ${applied.length + 1} of the step had a non-finite gradient: ` +
						`the step ends with ${applied.length} update${applied.length > 1 ? 's' : ''}.`
				);
				break updates;
			}
			applied.push(opt);
		}
	const last = applied[applied.length - 1];
	const metrics = summarizeTotals(perUpdate(totals, firstPass, applied.length));
	return {
		metrics: {
			...metrics,
			...counts,
			gradNorm: applied.reduce((s, o) => s + o.gradNorm, 0) / applied.length,
			gradScale: applied.reduce((s, o) => s + o.gradScale, 0) / applied.length,
			lr: last.lr,
			step: last.step,
			updates: applied.length,
			times: { referenceMs, forwardBackwardMs, optimizerMs, totalMs: now() - start }
		},
		warnings
	};
}

/** The totals of all updates as one update's: losses averaged over the updates, token and
 * sequence counts of the first pass (each pass trains the same tokens), the per-token sums
 * scaled to them so ratio, clip and KL means stay those over every update's tokens. */
function perUpdate(all: LossTotals, firstPass: LossTotals, updates: number): LossTotals {
	if (updates === 1) return all;
	const share = all.tokens > 0 ? firstPass.tokens / all.tokens : 1;
	return {
		...all,
		loss: all.loss / updates,
		policyLoss: all.policyLoss / updates,
		klLoss: all.klLoss / updates,
		tokens: firstPass.tokens,
		sequences: firstPass.sequences,
		ratioSum: all.ratioSum * share,
		clippedLow: all.clippedLow * share,
		clippedHigh: all.clippedHigh * share,
		klSum: all.klSum * share
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
			{ accumulate: i > 0, temperature: options.temperature, prefix: mb.prefix }
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
