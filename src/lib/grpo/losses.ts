/**
 * @file The GRPO policy losses per token, their aggregation over a step, the optional KL
 * penalty, and dLoss/dlogprob: the grad function of TransformerModel.forwardBackward.
 *
 *   const norm = planNormaliser(trainedTokensPerSequence, config);       // whole step
 *   for (const mb of microBatches)                                        // any split
 *     await model.forwardBackward(mb.tokens, (lp) => lossAndGrad({ ...mb, logprobs: lp },
 *       config, norm).dLogprobs, { accumulate: i > 0 });
 *
 * Per token (b, t) with the trained mask m, new logprob l, rollout logprob l_old, ratio
 * r = exp(l - l_old) and the sequence's advantage A:
 *
 *   cispo (ART's default): loss = -sg(clip(r, 1 - eps, 1 + eps_high)) * A * l
 *       dloss/dl = -clip(r, 1 - eps, 1 + eps_high) * A    (sg: stop-gradient, torch .detach())
 *       defaults eps = 1, eps_high = 4: the weight lies in [0, 5].
 *   ppo: loss = -min(r A, clip(r, 1 - eps, 1 + eps_high) A), eps = 0.2, eps_high = eps
 *       dloss/dl = -A r, except 0 where the clipped term is the smaller one
 *       (A > 0 and r > 1 + eps_high, or A < 0 and r < 1 - eps). At r exactly on a bound both
 *       terms are equal and torch's min and clamp pass the gradient through (half to each
 *       branch, the clamp's bound inclusive), so there the gradient is -A r too.
 *   Source: OpenPipe/ART src/art/loss.py (`loss_fn`: the `ppo` flag, epsilon defaults 1.0 /
 *   4.0 for CISPO and 0.2 / None = eps for PPO, both bounds applied to the CISPO weight).
 *   TRL's `cispo` clamps only from above (trl/trainer/grpo_trainer.py); ART's two-sided
 *   clip is what is adopted here (with eps = 1 the lower bound 0 never binds anyway).
 *
 *   KL penalty (optional, beta > 0), k3 estimator of KL(new || ref) as TRL computes it:
 *       kl = exp(l_ref - l) - (l_ref - l) - 1,   dkl/dl = 1 - exp(l_ref - l)
 *   added per token before aggregation: loss_t = policy_t + beta * kl_t (TRL
 *   grpo_trainer.py `_compute_loss`; ART adds the same k3 term, src/art/loss.py).
 *
 * Aggregation (TRL trl/trainer/grpo_trainer.py `_compute_loss`, `loss_type`), with S the
 * step's sequences, n_i sequence i's trained tokens and N = sum n_i, over the whole step:
 *   grpo:    (1/S) sum_i (1/n_i) sum_t loss_it   (mean per sequence, then over sequences)
 *   dr_grpo: (1/(S * L)) sum_i sum_t loss_it     (L = max_completion_length, a constant)
 *   dapo:    (1/N) sum_i sum_t loss_it           (token mean over the step; TRL's default)
 * TRL divides grpo and dr_grpo by the number of accumulation steps, which equals the above
 * when micro-batches are of equal size; here the normaliser is the whole step's, so any
 * split into micro-batches gives exactly the one-batch loss and gradient. dr_grpo's L is
 * `maxCompletionLength` when given (TRL: the config's max_completion_length); by default,
 * the most trained tokens of any sequence in the step.
 *
 * Missing rollout logprobs (NaN at a trained token) are an error unless
 * `allowMissingLogprobs`, which treats them as on-policy (r = 1), as ART does for
 * `allow_training_without_logprobs`.
 */
import { GrpoConfigError, InvalidBatchError, MissingLogprobsError } from './errors';

export type PolicyLossKind = 'cispo' | 'ppo';
export type Aggregation = 'grpo' | 'dr_grpo' | 'dapo';

export interface LossConfig {
	/** Default 'cispo' (ART's default). */
	loss?: PolicyLossKind;
	/** Default 'dapo' (TRL's default: token mean over the step). */
	aggregation?: Aggregation;
	/** Lower clip: the ratio's floor is 1 - epsilon. Default 1 (cispo), 0.2 (ppo). */
	epsilon?: number;
	/** Upper clip: the ratio's ceiling is 1 + epsilonHigh. Default 4 (cispo), epsilon (ppo). */
	epsilonHigh?: number;
	/** KL penalty coefficient; 0 (default) needs no reference logprobs. */
	klBeta?: number;
	/** dr_grpo's constant L; default: the longest trained span of the step. */
	maxCompletionLength?: number;
	/** Treat trained tokens without a rollout logprob as on-policy (ratio 1). Default false. */
	allowMissingLogprobs?: boolean;
}

export interface ResolvedLossConfig {
	loss: PolicyLossKind;
	aggregation: Aggregation;
	epsilon: number;
	epsilonHigh: number;
	klBeta: number;
	maxCompletionLength: number | undefined;
	allowMissingLogprobs: boolean;
}

/** ART's defaults per loss (src/art/loss.py). */
export const LOSS_DEFAULTS = {
	cispo: { epsilon: 1, epsilonHigh: 4 },
	ppo: { epsilon: 0.2 }
} as const;

export function resolveLossConfig(config: LossConfig = {}): ResolvedLossConfig {
	const loss = config.loss ?? 'cispo';
	if (loss !== 'cispo' && loss !== 'ppo')
		throw new GrpoConfigError(`loss must be 'cispo' or 'ppo'; got '${loss}'.`);
	const aggregation = config.aggregation ?? 'dapo';
	if (!['grpo', 'dr_grpo', 'dapo'].includes(aggregation))
		throw new GrpoConfigError(
			`aggregation must be 'grpo', 'dr_grpo' or 'dapo'; got '${aggregation}'.`
		);
	const epsilon = config.epsilon ?? LOSS_DEFAULTS[loss].epsilon;
	const epsilonHigh =
		config.epsilonHigh ?? (loss === 'cispo' ? LOSS_DEFAULTS.cispo.epsilonHigh : epsilon);
	const klBeta = config.klBeta ?? 0;
	const nonNegative = (name: string, v: number) => {
		if (!(Number.isFinite(v) && v >= 0))
			throw new GrpoConfigError(`${name} must be a finite number >= 0; got ${v}.`);
	};
	nonNegative('epsilon', epsilon);
	nonNegative('epsilonHigh', epsilonHigh);
	nonNegative('klBeta', klBeta);
	const L = config.maxCompletionLength;
	if (L !== undefined && !(Number.isInteger(L) && L >= 1))
		throw new GrpoConfigError(`maxCompletionLength must be a positive integer; got ${L}.`);
	return {
		loss,
		aggregation,
		epsilon,
		epsilonHigh,
		klBeta,
		maxCompletionLength: L,
		allowMissingLogprobs: config.allowMissingLogprobs ?? false
	};
}

/** One token's policy loss and its derivative w.r.t. the new logprob. */
export interface PolicyTokenTerms {
	loss: number;
	/** dloss/dlogprob. */
	dLoss: number;
	ratio: number;
	/** The ratio was below 1 - epsilon and the clip took effect (see `policyTokenLoss`). */
	clippedLow: boolean;
	/** The ratio was above 1 + epsilonHigh and the clip took effect. */
	clippedHigh: boolean;
}

/**
 * The policy term of one token (f64). `clippedLow/High` count where clipping changed the
 * result: for cispo, the weight hit a bound (whatever A's sign); for ppo, the clipped term
 * won the min and zeroed the gradient (TRL's clip_ratio/low_mean and high_mean).
 */
export function policyTokenLoss(
	kind: PolicyLossKind,
	logprob: number,
	rolloutLogprob: number,
	advantage: number,
	epsilon: number,
	epsilonHigh: number
): PolicyTokenTerms {
	const ratio = Math.exp(logprob - rolloutLogprob);
	const lo = 1 - epsilon;
	const hi = 1 + epsilonHigh;
	const clipped = Math.min(Math.max(ratio, lo), hi);
	const A = advantage;
	if (kind === 'cispo') {
		return {
			loss: -clipped * A * logprob,
			dLoss: -clipped * A,
			ratio,
			clippedLow: ratio < lo,
			clippedHigh: ratio > hi
		};
	}
	const clippedLow = A < 0 && ratio < lo;
	const clippedHigh = A > 0 && ratio > hi;
	return {
		loss: -Math.min(ratio * A, clipped * A),
		dLoss: clippedLow || clippedHigh ? 0 : -A * ratio,
		ratio,
		clippedLow,
		clippedHigh
	};
}

/** k3 estimate of KL(new || ref) at one token and its derivative w.r.t. the new logprob. */
export function klK3(logprob: number, refLogprob: number): { kl: number; dKl: number } {
	const d = refLogprob - logprob;
	const e = Math.exp(d);
	return { kl: e - d - 1, dKl: 1 - e };
}

/** The step-wide normaliser of an aggregation: computed once over every sequence of the
 * step, then shared by its micro-batches. */
export interface StepNormaliser {
	aggregation: Aggregation;
	/** Sequences with at least one trained token. */
	sequences: number;
	/** Trained tokens of the step. */
	tokens: number;
	/** dr_grpo's L. */
	maxCompletionLength: number;
}

/** The normaliser of a step from each sequence's trained-token count (all micro-batches). */
export function planNormaliser(
	trainedTokensPerSequence: readonly number[],
	config: LossConfig = {}
): StepNormaliser {
	const c = resolveLossConfig(config);
	let sequences = 0;
	let tokens = 0;
	let longest = 0;
	for (const n of trainedTokensPerSequence) {
		if (!(Number.isInteger(n) && n >= 0))
			throw new InvalidBatchError(`trained-token counts must be integers >= 0; got ${n}`);
		if (n === 0) continue;
		sequences++;
		tokens += n;
		longest = Math.max(longest, n);
	}
	return {
		aggregation: c.aggregation,
		sequences,
		tokens,
		maxCompletionLength: c.maxCompletionLength ?? Math.max(1, longest)
	};
}

/** The factor each trained token of a sequence with `trainedTokens` tokens gets. */
export function tokenWeight(norm: StepNormaliser, trainedTokens: number): number {
	if (trainedTokens === 0 || norm.tokens === 0) return 0;
	switch (norm.aggregation) {
		case 'grpo':
			return 1 / (norm.sequences * trainedTokens);
		case 'dr_grpo':
			return 1 / (norm.sequences * norm.maxCompletionLength);
		case 'dapo':
			return 1 / norm.tokens;
	}
}

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

/** Sums over trained tokens that add across micro-batches; `summarizeTotals` turns them
 * into the step's metrics. */
export interface LossTotals {
	/** The batch's share of the step's loss (already normalised). */
	loss: number;
	/** Its policy part, and beta times its KL part (loss = policyLoss + klLoss). */
	policyLoss: number;
	klLoss: number;
	tokens: number;
	sequences: number;
	ratioSum: number;
	clippedLow: number;
	clippedHigh: number;
	/** Sum of the unweighted per-token k3 KL (0 without reference logprobs). */
	klSum: number;
	/** Whether reference logprobs were given. */
	hasKl: boolean;
}

export interface LossMetrics {
	loss: number;
	policyLoss: number;
	klLoss: number;
	/** Mean k3 KL(new || ref) per trained token; undefined without reference logprobs. */
	klMean: number | undefined;
	/** Mean importance ratio over trained tokens. */
	ratioMean: number;
	/** Fractions of trained tokens clipped low / high. */
	clipLowFraction: number;
	clipHighFraction: number;
	tokens: number;
	sequences: number;
}

export interface LossResult {
	/** This batch's share of the step's loss. */
	loss: number;
	/** dLoss/dlogprobs [B, T - 1], 0 where the mask is 0. */
	dLogprobs: Float32Array;
	totals: LossTotals;
	metrics: LossMetrics;
}

export function emptyTotals(): LossTotals {
	return {
		loss: 0,
		policyLoss: 0,
		klLoss: 0,
		tokens: 0,
		sequences: 0,
		ratioSum: 0,
		clippedLow: 0,
		clippedHigh: 0,
		klSum: 0,
		hasKl: false
	};
}

/** a + b (micro-batches of one step). */
export function addTotals(a: LossTotals, b: LossTotals): LossTotals {
	return {
		loss: a.loss + b.loss,
		policyLoss: a.policyLoss + b.policyLoss,
		klLoss: a.klLoss + b.klLoss,
		tokens: a.tokens + b.tokens,
		sequences: a.sequences + b.sequences,
		ratioSum: a.ratioSum + b.ratioSum,
		clippedLow: a.clippedLow + b.clippedLow,
		clippedHigh: a.clippedHigh + b.clippedHigh,
		klSum: a.klSum + b.klSum,
		hasKl: a.hasKl || b.hasKl
	};
}

export function summarizeTotals(t: LossTotals): LossMetrics {
	const per = (x: number) => (t.tokens > 0 ? x / t.tokens : 0);
	return {
		loss: t.loss,
		policyLoss: t.policyLoss,
		klLoss: t.klLoss,
		klMean: t.hasKl ? per(t.klSum) : undefined,
		ratioMean: per(t.ratioSum),
		clipLowFraction: per(t.clippedLow),
		clipHighFraction: per(t.clippedHigh),
		tokens: t.tokens,
		sequences: t.sequences
	};
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
