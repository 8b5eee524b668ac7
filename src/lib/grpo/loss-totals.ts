/**
 * @file Loss sums over trained tokens that add across a step's micro-batches, and the
 * step's metrics made from them.
 */

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
