/**
 * @file One token's policy loss and KL term, with r = exp(l - l_old) and advantage A:
 *   cispo: loss = -sg(clip(r, 1 - eps, 1 + eps_high)) * A * l, dloss/dl = -clip(r, ...) * A
 *     (ART's two-sided clip; TRL's clamps only from above; with eps = 1 the floor never binds)
 *   ppo: loss = -min(r A, clip(r, ...) A), dloss/dl = -A r, or 0 where the clipped term is
 *     the smaller (on a bound exactly, torch's min and clamp pass the gradient: -A r)
 *   KL (k3, as TRL): kl = exp(l_ref - l) - (l_ref - l) - 1, dkl/dl = 1 - exp(l_ref - l)
 */
import type { PolicyLossKind } from './loss-config';

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
