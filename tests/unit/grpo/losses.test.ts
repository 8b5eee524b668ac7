/**
 * The GRPO losses against hand computations, gradients against f64 central differences
 * (h = 1e-6; atol 1e-8 + rtol 1e-6), clip boundaries, masking, accumulation. CISPO's weight
 * is detached, so its finite difference moves l and the rollout logprob together, leaving
 * r (and the weight) fixed.
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../../../src/lib/util/random';
import {
	InvalidBatchError,
	MissingLogprobsError,
	GrpoConfigError
} from '../../../src/lib/grpo/errors';
import { lossAndGrad, type LossBatch } from '../../../src/lib/grpo/losses';
import {
	resolveLossConfig,
	type Aggregation,
	type LossConfig,
	type PolicyLossKind
} from '../../../src/lib/grpo/loss-config';
import { klK3, policyTokenLoss } from '../../../src/lib/grpo/loss-terms';
import { planNormaliser } from '../../../src/lib/grpo/loss-normaliser';
import { addTotals, emptyTotals, summarizeTotals } from '../../../src/lib/grpo/loss-totals';

const LOSSES: PolicyLossKind[] = ['cispo', 'ppo'];
const AGGREGATIONS: Aggregation[] = ['grpo', 'dr_grpo', 'dapo'];

/** The double next to x towards +Infinity or -Infinity. */
function nextDouble(x: number, dir: 1 | -1): number {
	const f = new Float64Array([x]);
	const u = new BigInt64Array(f.buffer);
	u[0] += BigInt(x > 0 ? dir : -dir);
	return f[0];
}

/** A logprob l with exp(l - 0) === target exactly (searching a few doubles around log). */
function logprobWithRatio(target: number): number {
	let l = Math.log(target);
	for (let k = 0; k < 64 && Math.exp(l) !== target; k++)
		l = Math.exp(l) < target ? nextDouble(l, 1) : nextDouble(l, -1);
	expect(Math.exp(l)).toBe(target);
	return l;
}

describe('resolveLossConfig', () => {
	it("ART's defaults: cispo with the weight in [0, 5], ppo with eps 0.2 on both sides", () => {
		const c = resolveLossConfig();
		expect(c).toMatchObject({ loss: 'cispo', aggregation: 'dapo', klBeta: 0 });
		expect([1 - c.epsilon, 1 + c.epsilonHigh]).toEqual([0, 5]);
		const p = resolveLossConfig({ loss: 'ppo' });
		expect([p.epsilon, p.epsilonHigh]).toEqual([0.2, 0.2]);
		expect(resolveLossConfig({ loss: 'ppo', epsilonHigh: 0.28 }).epsilonHigh).toBe(0.28);
	});
	it('rejects bad values', () => {
		for (const bad of [
			{ epsilon: -0.1 },
			{ epsilonHigh: NaN },
			{ klBeta: -1 },
			{ maxCompletionLength: 0 },
			{ loss: 'grpo' as PolicyLossKind },
			{ aggregation: 'bnpo' as Aggregation }
		])
			expect(() => resolveLossConfig(bad)).toThrow(GrpoConfigError);
	});
});

describe('per-token losses (hand computations)', () => {
	it('cispo: -clip(r, 0, 5) A l, gradient -clip(r) A', () => {
		// l = -1, l_old = -1.5: r = e^0.5 = 1.6487212707; A = 2.
		// loss = -1.6487 * 2 * (-1) = 3.2974425414; dloss/dl = -3.2974425414.
		const t = policyTokenLoss('cispo', -1, -1.5, 2, 1, 4);
		expect(t.ratio).toBeCloseTo(1.6487212707, 9);
		expect(t.loss).toBeCloseTo(3.2974425414, 9);
		expect(t.dLoss).toBeCloseTo(-3.2974425414, 9);
		expect([t.clippedLow, t.clippedHigh]).toEqual([false, false]);
		// l = -0.1, l_old = -2: r = e^1.9 = 6.69 > 5, so the weight is 5; A = -1.
		// loss = -5 * (-1) * (-0.1) = -0.5; dloss/dl = 5. Clipped high whatever A's sign.
		const c = policyTokenLoss('cispo', -0.1, -2, -1, 1, 4);
		expect(c.loss).toBeCloseTo(-0.5, 14);
		expect(c.dLoss).toBe(5);
		expect(c.clippedHigh).toBe(true);
		// A lower bound that binds (eps 0.5): r = e^-1 = 0.368 < 0.5 -> weight 0.5, A = 1, l = -2:
		// loss = -0.5 * 1 * (-2) = 1; dloss/dl = -0.5.
		const low = policyTokenLoss('cispo', -2, -1, 1, 0.5, 4);
		expect(low.loss).toBe(1);
		expect(low.dLoss).toBe(-0.5);
		expect(low.clippedLow).toBe(true);
	});

	it('ppo: -min(r A, clip(r, 0.8, 1.2) A) in each region', () => {
		const eps = 0.2;
		const e01 = Math.exp(0.1); // 1.1051709181
		const e05 = Math.exp(0.5); // 1.6487212707
		const em05 = Math.exp(-0.5); // 0.6065306597
		// Inside the range: loss = -r A, gradient -r A.
		let t = policyTokenLoss('ppo', -1, -1.1, 1, eps, eps);
		expect(t.loss).toBeCloseTo(-e01, 14);
		expect(t.dLoss).toBeCloseTo(-e01, 14);
		// A = 1, r = 1.649 > 1.2: min(1.649, 1.2) = 1.2 -> loss -1.2, gradient 0, clipped high.
		t = policyTokenLoss('ppo', -1, -1.5, 1, eps, eps);
		expect(t.loss).toBeCloseTo(-1.2, 14);
		expect(t.dLoss).toBe(0);
		expect([t.clippedLow, t.clippedHigh]).toEqual([false, true]);
		// A = -1, r = 1.649: min(-1.649, -1.2) = -1.649 -> loss 1.649, gradient -A r = 1.649.
		t = policyTokenLoss('ppo', -1, -1.5, -1, eps, eps);
		expect(t.loss).toBeCloseTo(e05, 14);
		expect(t.dLoss).toBeCloseTo(e05, 14);
		expect([t.clippedLow, t.clippedHigh]).toEqual([false, false]);
		// A = -1, r = 0.607 < 0.8: min(-0.607, -0.8) = -0.8 -> loss 0.8, gradient 0, clipped low.
		t = policyTokenLoss('ppo', -1.5, -1, -1, eps, eps);
		expect(t.loss).toBeCloseTo(0.8, 14);
		expect(t.dLoss).toBe(0);
		expect([t.clippedLow, t.clippedHigh]).toEqual([true, false]);
		// A = 1, r = 0.607: min(0.607, 0.8) = 0.607 -> loss -0.607, gradient -0.607.
		t = policyTokenLoss('ppo', -1.5, -1, 1, eps, eps);
		expect(t.loss).toBeCloseTo(-em05, 14);
		expect(t.dLoss).toBeCloseTo(-em05, 14);
		// A = 0: nothing.
		t = policyTokenLoss('ppo', -1, -1.5, 0, eps, eps);
		expect(Math.abs(t.loss) + Math.abs(t.dLoss)).toBe(0);
	});

	it('ppo at the clip boundaries: at the bound the gradient flows, one double beyond it is 0', () => {
		// r exactly 1.2 (A > 0) and exactly 0.8 (A < 0): both terms of the min are equal and
		// torch passes the gradient (clamp's bounds are inclusive): -A r.
		for (const [bound, A] of [
			[1.2, 2],
			[0.8, -2]
		]) {
			const l = logprobWithRatio(bound);
			const at = policyTokenLoss('ppo', l, 0, A, 0.2, 0.2);
			expect(at.ratio).toBe(bound);
			expect(at.loss).toBeCloseTo(-A * bound, 14);
			expect(at.dLoss).toBeCloseTo(-A * bound, 14);
			expect(at.clippedLow || at.clippedHigh).toBe(false);
			// Step l outward until the ratio leaves the range: the gradient is 0 and the loss the
			// clipped one (continuous with the value at the bound).
			let out = l;
			do out = nextDouble(out, A > 0 ? 1 : -1);
			while (Math.exp(out) === bound);
			const beyond = policyTokenLoss('ppo', out, 0, A, 0.2, 0.2);
			expect(beyond.dLoss).toBe(0);
			expect(beyond.loss).toBeCloseTo(-A * bound, 14);
			expect(A > 0 ? beyond.clippedHigh : beyond.clippedLow).toBe(true);
		}
	});

	it('cispo at its bound r = 5: weight 5 at and beyond it, clipped only beyond', () => {
		const l = logprobWithRatio(5);
		const at = policyTokenLoss('cispo', l, 0, 1, 1, 4);
		expect(at.dLoss).toBe(-5);
		expect(at.clippedHigh).toBe(false);
		const beyond = policyTokenLoss('cispo', l + 1, 0, 1, 1, 4);
		expect(beyond.dLoss).toBe(-5);
		expect(beyond.clippedHigh).toBe(true);
	});

	it('k3 KL: exp(ref - l) - (ref - l) - 1 and its derivative 1 - exp(ref - l)', () => {
		// l = -1, ref = -1.5: d = -0.5; kl = 0.6065306597 + 0.5 - 1 = 0.1065306597;
		// dkl/dl = 1 - 0.6065306597 = 0.3934693403.
		const k = klK3(-1, -1.5);
		expect(k.kl).toBeCloseTo(0.1065306597, 10);
		expect(k.dKl).toBeCloseTo(0.3934693403, 10);
		expect(klK3(-0.7, -0.7)).toEqual({ kl: 0, dKl: 0 });
	});
});

/**
 * Two rows, 3 columns, r = 1 everywhere (rollout = new). Both losses then have gradient -A
 * per token; cispo's token loss is -A l, ppo's -r A = -A:
 *   row 0: A = 1,    l = [-1, -2, pad], mask [1, 1, 0]
 *          cispo losses [1, 2] (sum 3);            ppo losses [-1, -1] (sum -2)
 *   row 1: A = -0.5, l = [-1, -1, -2],  mask [1, 1, 1]
 *          cispo losses [-0.5, -0.5, -1] (sum -2); ppo losses [0.5, 0.5, 0.5] (sum 1.5)
 */
function handBatch(): LossBatch {
	const logprobs = [-1, -2, NaN, -1, -1, -2];
	return {
		B: 2,
		logprobs,
		rolloutLogprobs: logprobs.slice(),
		mask: [1, 1, 0, 1, 1, 1],
		advantages: [1, -0.5]
	};
}

describe('aggregations (hand computations)', () => {
	// [aggregation, extra config, cispo loss, ppo loss, gradient of rows 0 and 1]
	const cases: [Aggregation, LossConfig, number, number, [number, number]][] = [
		// grpo: cispo (1/2) [3/2 + (-2)/3] = 5/12; ppo (1/2) [-2/2 + 1.5/3] = -0.25;
		//   gradients -A / (S n_i): row 0 -1 / (2 * 2) = -0.25, row 1 0.5 / (2 * 3) = 1/12
		['grpo', {}, 5 / 12, -0.25, [-0.25, 1 / 12]],
		// dapo: cispo (3 - 2) / 5 = 0.2; ppo (-2 + 1.5) / 5 = -0.1; gradients -A / 5: -0.2, 0.1
		['dapo', {}, 0.2, -0.1, [-0.2, 0.1]],
		// dr_grpo, L = 4: cispo 1 / (2 * 4) = 0.125; ppo -0.5 / 8 = -0.0625; gradients
		//   -A / 8: -0.125, 0.0625
		['dr_grpo', { maxCompletionLength: 4 }, 0.125, -0.0625, [-0.125, 0.0625]],
		// dr_grpo, default L = the longest trained span = 3: cispo 1/6; ppo -0.5 / 6 = -1/12;
		//   gradients -1/6, 1/12
		['dr_grpo', {}, 1 / 6, -1 / 12, [-1 / 6, 1 / 12]]
	];
	for (const loss of LOSSES)
		for (const [aggregation, extra, cispoLoss, ppoLoss, [g0, g1]] of cases)
			it(`${loss} / ${aggregation} ${JSON.stringify(extra)}`, () => {
				const r = lossAndGrad(handBatch(), { loss, aggregation, ...extra });
				expect(r.loss).toBeCloseTo(loss === 'cispo' ? cispoLoss : ppoLoss, 14);
				expect(r.dLogprobs).toBeAllclose([g0, g0, 0, g1, g1, g1], { atol: 0, rtol: 1e-7 });
				expect(r.metrics).toMatchObject({
					tokens: 5,
					sequences: 2,
					ratioMean: 1,
					clipLowFraction: 0,
					clipHighFraction: 0,
					klMean: undefined
				});
			});

	it('the KL term adds beta * k3 per token before aggregation', () => {
		// handBatch with ref = l + 0.5 at every trained token: d = 0.5, k3 = e^0.5 - 1.5 =
		// 0.1487212707 per token, dk3/dl = 1 - e^0.5 = -0.6487212707. dapo, beta 0.1:
		// loss = 0.2 + 0.1 * 0.1487212707 (mean over 5 tokens of a constant) = 0.2148721271;
		// gradient row 0: (-1 + 0.1 * -0.6487212707) / 5 = -0.2129744254,
		//          row 1: (0.5 + 0.1 * -0.6487212707) / 5 = 0.0870255746.
		const b = handBatch();
		const ref = (b.logprobs as number[]).map((l) => l + 0.5);
		const r = lossAndGrad({ ...b, refLogprobs: ref }, { klBeta: 0.1 });
		expect(r.loss).toBeCloseTo(0.2148721271, 10);
		expect(r.metrics.klMean).toBeCloseTo(0.1487212707, 10);
		expect(r.metrics.klLoss).toBeCloseTo(0.01487212707, 10);
		const [g0, g1] = [-0.2129744254, 0.0870255746];
		expect(r.dLogprobs).toBeAllclose([g0, g0, 0, g1, g1, g1], { atol: 0, rtol: 1e-7 });
		// The KL is reported with beta = 0 too, without entering the loss.
		const r0 = lossAndGrad({ ...b, refLogprobs: ref }, {});
		expect(r0.loss).toBeCloseTo(0.2, 14);
		expect(r0.metrics.klMean).toBeCloseTo(0.1487212707, 10);
	});

	it('metrics: mean ratio and clip fractions over trained tokens', () => {
		// ppo, A = 1 on one row: ratios e^0.5 (clipped high), e^0 (inside), e^-0.5 (inside:
		// A > 0 is not clipped low); a masked token with a wild ratio is not counted.
		const r = lossAndGrad(
			{
				B: 1,
				logprobs: [-1, -1, -1, -1],
				rolloutLogprobs: [-1.5, -1, -0.5, -9],
				mask: [1, 1, 1, 0],
				advantages: [1]
			},
			{ loss: 'ppo' }
		);
		expect(r.metrics.ratioMean).toBeCloseTo((Math.exp(0.5) + 1 + Math.exp(-0.5)) / 3, 14);
		expect(r.metrics.clipHighFraction).toBeCloseTo(1 / 3, 14);
		expect(r.metrics.clipLowFraction).toBe(0);
		expect(r.metrics.tokens).toBe(3);
	});
});

/** A random batch: ratios spread over [e^-0.4, e^0.4] = [0.67, 1.49] (some clipped either way
 * at eps 0.2 / 0.3, most not). */
function randomBatch(rng: Rng, B: number, cols: number, withRef: boolean): LossBatch {
	const n = B * cols;
	const logprobs = Array.from({ length: n }, () => -0.05 - 3 * rng.next());
	const rolloutLogprobs = logprobs.map((l) => l + 0.8 * (rng.next() - 0.5));
	const refLogprobs = withRef ? logprobs.map((l) => l + (rng.next() - 0.5)) : undefined;
	const mask = Array.from({ length: n }, () => (rng.next() < 0.7 ? 1 : 0));
	mask[0] = 1; // row 0 always trains something
	const advantages = Array.from({ length: B }, () => 2 * rng.next() - 1);
	return { B, logprobs, rolloutLogprobs, refLogprobs, mask, advantages };
}

/** True when a ratio is within 1e-4 of a clip bound (a kink of the ppo loss). */
function nearKink(b: LossBatch, c: ReturnType<typeof resolveLossConfig>): boolean {
	for (let i = 0; i < b.logprobs.length; i++) {
		const r = Math.exp(b.logprobs[i] - b.rolloutLogprobs[i]);
		if (Math.abs(r - (1 - c.epsilon)) < 1e-4 || Math.abs(r - (1 + c.epsilonHigh)) < 1e-4)
			return true;
	}
	return false;
}

describe('gradients against central finite differences (f64)', () => {
	for (const loss of LOSSES)
		for (const aggregation of AGGREGATIONS)
			for (const klBeta of [0, 0.3])
				it(`${loss} / ${aggregation} / beta ${klBeta}`, () => {
					const config: LossConfig = { loss, aggregation, klBeta, epsilonHigh: 0.3 };
					const c = resolveLossConfig(config);
					const rng = new Rng(11 + klBeta * 10 + aggregation.length);
					let batch: LossBatch;
					do batch = randomBatch(rng, 3, 5, klBeta > 0);
					while (nearKink(batch, c));
					const { dLogprobs, metrics } = lossAndGrad(batch, config);
					expect(metrics.clipHighFraction + metrics.clipLowFraction).toBeGreaterThan(0);
					const h = 1e-6;
					const fd: number[] = [];
					for (let i = 0; i < batch.logprobs.length; i++) {
						const at = (delta: number) => {
							const l = Array.from(batch.logprobs);
							const old = Array.from(batch.rolloutLogprobs);
							l[i] += delta;
							if (loss === 'cispo') old[i] += delta; // the weight is detached
							return lossAndGrad({ ...batch, logprobs: l, rolloutLogprobs: old }, config).loss;
						};
						fd.push((at(h) - at(-h)) / (2 * h));
					}
					expect(dLogprobs).toBeAllclose(fd, { atol: 1e-8, rtol: 1e-6 });
					// Masked entries have exactly zero gradient; trained ones mostly not.
					for (let i = 0; i < fd.length; i++) if (!batch.mask[i]) expect(dLogprobs[i]).toBe(0);
					expect(dLogprobs.filter((g) => g !== 0).length).toBeGreaterThan(5);
				});
});

describe('masking', () => {
	it('masked tokens contribute nothing, whatever their values (NaN included)', () => {
		const rng = new Rng(3);
		const b = randomBatch(rng, 3, 6, true);
		const config: LossConfig = { loss: 'ppo', aggregation: 'grpo', klBeta: 0.2 };
		const base = lossAndGrad(b, config);
		const wild = (a: ArrayLike<number>, v: number) => Array.from(a, (x, i) => (b.mask[i] ? x : v));
		for (const v of [NaN, 50, -1e6]) {
			const r = lossAndGrad(
				{
					...b,
					logprobs: wild(b.logprobs, v),
					rolloutLogprobs: wild(b.rolloutLogprobs, v),
					refLogprobs: wild(b.refLogprobs!, v)
				},
				config
			);
			expect(r.loss).toBe(base.loss);
			expect(Array.from(r.dLogprobs)).toEqual(Array.from(base.dLogprobs));
		}
	});

	it('a row with no trained token counts for no sequence', () => {
		const b = handBatch();
		const withEmpty: LossBatch = {
			B: 3,
			logprobs: [...(b.logprobs as number[]), -1, -1, -1],
			rolloutLogprobs: [...(b.rolloutLogprobs as number[]), NaN, NaN, NaN],
			mask: [...(b.mask as number[]), 0, 0, 0],
			advantages: [1, -0.5, 7]
		};
		const r = lossAndGrad(withEmpty, { aggregation: 'grpo' });
		expect(r.loss).toBeCloseTo(5 / 12, 14);
		expect(r.metrics.sequences).toBe(2);
	});
});

/** Rows [from, to) of a batch, narrowed to `cols` columns (a micro-batch padded to its own
 * length, as pack.ts makes them). */
function rowsOf(b: LossBatch, from: number, to: number, cols: number): LossBatch {
	const width = b.logprobs.length / b.B;
	const take = (a: ArrayLike<number | boolean> | undefined) => {
		if (!a) return undefined;
		const out: (number | boolean)[] = [];
		for (let r = from; r < to; r++)
			for (let j = 0; j < cols; j++) out.push(a[r * width + j] as number | boolean);
		return out;
	};
	return {
		B: to - from,
		logprobs: take(b.logprobs) as number[],
		rolloutLogprobs: take(b.rolloutLogprobs) as number[],
		refLogprobs: take(b.refLogprobs) as number[] | undefined,
		mask: take(b.mask)!,
		advantages: Array.from(b.advantages).slice(from, to)
	};
}

describe('gradient accumulation', () => {
	for (const loss of LOSSES)
		for (const aggregation of AGGREGATIONS)
			it(`${loss} / ${aggregation}: micro-batches with the step's normaliser give the one-batch loss and gradient`, () => {
				const rng = new Rng(21);
				const B = 5;
				const cols = 6;
				const b = randomBatch(rng, B, cols, true);
				// Rows 3 and 4 end early (shorter sequences): nothing trained past column 3.
				const m = Array.from(b.mask);
				for (const r of [3, 4]) for (let j = 3; j < cols; j++) m[r * cols + j] = 0;
				b.mask = m;
				const config: LossConfig = { loss, aggregation, klBeta: 0.05 };
				const whole = lossAndGrad(b, config);
				const parts = [rowsOf(b, 0, 2, cols), rowsOf(b, 2, 3, cols), rowsOf(b, 3, 5, 3)];
				const counts = parts.flatMap((p) =>
					Array.from({ length: p.B }, (_, r) => {
						const w = p.logprobs.length / p.B;
						let n = 0;
						for (let j = 0; j < w; j++) if (p.mask[r * w + j]) n++;
						return n;
					})
				);
				const norm = planNormaliser(counts, config);
				let totals = emptyTotals();
				const grads: number[][] = [];
				for (const p of parts) {
					const r = lossAndGrad(p, config, norm);
					totals = addTotals(totals, r.totals);
					grads.push(Array.from(r.dLogprobs));
				}
				expect(totals.loss).toBeCloseTo(whole.loss, 14);
				// Re-assemble the micro-batches' gradients onto the whole grid.
				const assembled = new Array<number>(B * cols).fill(0);
				let row = 0;
				for (const [k, p] of parts.entries()) {
					const w = p.logprobs.length / p.B;
					for (let r = 0; r < p.B; r++, row++)
						for (let j = 0; j < w; j++) assembled[row * cols + j] = grads[k][r * w + j];
				}
				expect(assembled).toEqual(Array.from(whole.dLogprobs));
				const s = summarizeTotals(totals);
				expect(s.tokens).toBe(whole.metrics.tokens);
				expect(s.sequences).toBe(B);
				expect(s.ratioMean).toBeCloseTo(whole.metrics.ratioMean, 14);
				expect(s.klMean!).toBeCloseTo(whole.metrics.klMean!, 14);
				// Without the step's normaliser each micro-batch would normalise by itself and the
				// sum would differ (dr_grpo's default L aside, which can coincide).
				if (aggregation !== 'dr_grpo') {
					const alone = parts.reduce((s, p) => s + lossAndGrad(p, config).loss, 0);
					expect(Math.abs(alone - whole.loss)).toBeGreaterThan(1e-6);
				}
			});
});

describe('bad input', () => {
	it('klBeta > 0 without reference logprobs', () => {
		expect(() => lossAndGrad(handBatch(), { klBeta: 0.1 })).toThrow(InvalidBatchError);
	});
	it('a trained token without a rollout logprob, unless allowed (then on-policy: r = 1)', () => {
		const b = handBatch();
		const old = Array.from(b.rolloutLogprobs);
		old[4] = NaN; // row 1, column 1: token 2 of that sequence
		let caught: unknown;
		try {
			lossAndGrad({ ...b, rolloutLogprobs: old });
		} catch (e) {
			caught = e;
		}
		expect(caught).toBeInstanceOf(MissingLogprobsError);
		expect((caught as MissingLogprobsError).kind).toBe('missing-logprobs');
		expect([
			(caught as MissingLogprobsError).sequence,
			(caught as MissingLogprobsError).position
		]).toEqual([1, 2]);
		// handBatch already has r = 1, so allowing the gap changes nothing.
		const r = lossAndGrad({ ...b, rolloutLogprobs: old }, { allowMissingLogprobs: true });
		expect(r.loss).toBeCloseTo(0.2, 14);
		// An infinite rollout logprob is never treated as missing.
		old[4] = -Infinity;
		expect(() =>
			lossAndGrad({ ...b, rolloutLogprobs: old }, { allowMissingLogprobs: true })
		).toThrow(MissingLogprobsError);
	});
	it('grids of different sizes, a wrong number of advantages, a NaN new logprob', () => {
		const b = handBatch();
		expect(() => lossAndGrad({ ...b, mask: [1, 1, 0, 1] })).toThrow(InvalidBatchError);
		expect(() => lossAndGrad({ ...b, advantages: [1] })).toThrow(InvalidBatchError);
		expect(() => lossAndGrad({ ...b, advantages: [1, NaN] })).toThrow(InvalidBatchError);
		const l = Array.from(b.logprobs);
		l[0] = NaN;
		expect(() => lossAndGrad({ ...b, logprobs: l })).toThrow(InvalidBatchError);
		const norm = planNormaliser([2, 3], { aggregation: 'grpo' });
		expect(() => lossAndGrad(b, { aggregation: 'dapo' }, norm)).toThrow(InvalidBatchError);
	});
});
