/**
 * @file The GRPO loss of a (micro-)batch and dLoss/dlogprob, the grad function of
 * TransformerModel.forwardBackward:
 *
 *   const norm = planNormaliser(trainedTokensPerSequence, config);       // whole step
 *   for (const mb of microBatches)                                        // any split
 *     await model.forwardBackward(mb.tokens, (lp) => lossAndGrad({ ...mb, logprobs: lp },
 *       config, norm).dLogprobs, { accumulate: i > 0 });
 */
import { InvalidBatchError, MissingLogprobsError } from './errors';
import { resolveLossConfig, type LossConfig } from './loss-config';
import { klK3, policyTokenLoss } from './loss-terms';
import { planNormaliser, tokenWeight, type StepNormaliser } from './loss-normaliser';
import { emptyTotals, summarizeTotals, type LossMetrics, type LossTotals } from './loss-totals';

/** A batch on the logprobs grid [B, T - 1] (`cols` = T - 1), row-major. */
export interface LossBatch {
	B: number;
	/** New logprobs [B, T - 1] (NaN past each sequence's end is fine where the mask is 0). */
	logprobs: ArrayLike<number>;
	/** Logprobs at sampling [B, T - 1]; NaN where there is none. */
	rolloutLogprobs: ArrayLike<number>;
	/** Base-model logprobs [B, T - 1]; needed when klBeta > 0. */
	refLogprobs?: ArrayLike<number>;
	/** [B, T - 1]: nonzero / true where the target token is trained. */
	mask: ArrayLike<number | boolean>;
	/** [B]: each row's advantage. */
	advantages: ArrayLike<number>;
}

export interface LossResult {
	/** This batch's share of the step's loss. */
	loss: number;
	/** dLoss/dlogprobs [B, T - 1], 0 where the mask is 0. */
	dLogprobs: Float32Array;
	totals: LossTotals;
	metrics: LossMetrics;
}

/** Row count and grid width of a batch; InvalidBatchError when the arrays disagree. */
export function checkGrid(
	B: number,
	grids: Record<string, ArrayLike<unknown> | undefined>,
	rowValues: Record<string, ArrayLike<unknown>>
): number {
	if (!(Number.isInteger(B) && B >= 1)) throw new InvalidBatchError(`B must be >= 1; got ${B}`);
	let size: number | undefined;
	for (const [name, g] of Object.entries(grids)) {
		if (!g) continue;
		size ??= g.length;
		if (g.length !== size || size % B !== 0 || size === 0)
			throw new InvalidBatchError(
				`${name} has ${g.length} values; every grid must be [B, T - 1] with B = ${B} ` +
					`(first grid: ${size} values)`
			);
	}
	for (const [name, v] of Object.entries(rowValues))
		if (v.length !== B)
			throw new InvalidBatchError(`${name} must have one value per row (${B}); got ${v.length}`);
	return (size ?? 0) / B;
}

/**
 * Loss and dLoss/dlogprobs of one (micro-)batch. `norm` is the step's normaliser
 * (`planNormaliser` over every sequence of the step); omitted, the batch is the whole step.
 * The returned loss is this batch's share: the step's loss is the sum over its micro-batches.
 */
export function lossAndGrad(
	batch: LossBatch,
	config: LossConfig = {},
	norm?: StepNormaliser
): LossResult {
	const c = resolveLossConfig(config);
	const { B, logprobs, rolloutLogprobs, refLogprobs, mask, advantages } = batch;
	const cols = checkGrid(B, { logprobs, rolloutLogprobs, mask, refLogprobs }, { advantages });
	if (c.klBeta > 0 && !refLogprobs)
		throw new InvalidBatchError(
			`klBeta is ${c.klBeta} but no reference logprobs were given (score the batch with ` +
				'the LoRA switched off: model.scoreTokens(batch, { lora: false }))'
		);
	const counts = rowCounts(mask, B, cols);
	const n = norm ?? planNormaliser(counts, c);
	if (norm && norm.aggregation !== c.aggregation)
		throw new InvalidBatchError(
			`the normaliser was planned for '${norm.aggregation}', the config says '${c.aggregation}'`
		);
	const dLogprobs = new Float32Array(B * cols);
	const t = emptyTotals();
	t.hasKl = refLogprobs !== undefined;
	for (let b = 0; b < B; b++) {
		if (counts[b] === 0) continue;
		const A = advantages[b];
		if (!Number.isFinite(A)) throw new InvalidBatchError(`advantage of row ${b} is ${A}`);
		const w = tokenWeight(n, counts[b]);
		t.sequences++;
		for (let j = 0; j < cols; j++) {
			const i = b * cols + j;
			if (!mask[i]) continue;
			const l = logprobs[i];
			if (!Number.isFinite(l))
				throw new InvalidBatchError(
					`new logprob at trained position [${b}, ${j}] is ${l} (is the mask past the sequence's end?)`
				);
			let old = rolloutLogprobs[i];
			if (!Number.isFinite(old)) {
				if (!c.allowMissingLogprobs || !Number.isNaN(old)) throw new MissingLogprobsError(b, j + 1);
				old = l; // on-policy, as ART assumes for missing logprobs
			}
			const p = policyTokenLoss(c.loss, l, old, A, c.epsilon, c.epsilonHigh);
			let dLoss = p.dLoss;
			t.policyLoss += w * p.loss;
			if (refLogprobs) {
				const ref = refLogprobs[i];
				if (!Number.isFinite(ref))
					throw new InvalidBatchError(`reference logprob at [${b}, ${j}] is ${ref}`);
				const k = klK3(l, ref);
				t.klSum += k.kl;
				if (c.klBeta > 0) {
					t.klLoss += w * c.klBeta * k.kl;
					dLoss += c.klBeta * k.dKl;
				}
			}
			dLogprobs[i] = w * dLoss;
			t.tokens++;
			t.ratioSum += p.ratio;
			if (p.clippedLow) t.clippedLow++;
			if (p.clippedHigh) t.clippedHigh++;
		}
	}
	t.loss = t.policyLoss + t.klLoss;
	return { loss: t.loss, dLogprobs, totals: t, metrics: summarizeTotals(t) };
}

/** Trained tokens per row of a mask [B, cols]. */
export function rowCounts(mask: ArrayLike<number | boolean>, B: number, cols: number): number[] {
	const counts = new Array<number>(B).fill(0);
	for (let b = 0; b < B; b++) for (let j = 0; j < cols; j++) if (mask[b * cols + j]) counts[b]++;
	return counts;
}
