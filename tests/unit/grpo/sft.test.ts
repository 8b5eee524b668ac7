/**
 * The SFT loss against a hand computation, its gradient against central finite
 * differences (f64, h = 1e-6; the loss is linear, so the differences are exact up to
 * rounding ~1e-10), and accumulation over micro-batches with the step's token count.
 */
import { describe, expect, it } from 'vitest';
import { InvalidBatchError } from '../../../src/lib/grpo/errors';
import { sftLossAndGrad } from '../../../src/lib/grpo/sft';

describe('sftLossAndGrad', () => {
	// Two rows, 3 columns: row 0 trains l = -1, -2 (third masked, NaN past the end);
	// row 1 trains -0.5 only. N = 3: loss = -(-1 - 2 - 0.5) / 3 = 3.5 / 3 = 1.1666667;
	// gradient -1/3 at each trained token, 0 elsewhere.
	const batch = { B: 2, logprobs: [-1, -2, NaN, -4, -0.5, -9], mask: [1, 1, 0, 0, 1, 0] };

	it('mean negative logprob of the trained tokens', () => {
		const r = sftLossAndGrad(batch);
		expect(r.loss).toBeCloseTo(3.5 / 3, 15);
		expect(r.tokens).toBe(3);
		expect(r.dLogprobs).toBeAllclose([-1 / 3, -1 / 3, 0, 0, -1 / 3, 0], { atol: 0, rtol: 1e-7 });
	});

	it('gradient matches central finite differences', () => {
		const r = sftLossAndGrad(batch);
		const h = 1e-6;
		const fd = batch.logprobs.map((_, i) => {
			if (!batch.mask[i]) return 0; // NaN there: not a function of it
			const at = (d: number) => {
				const l = batch.logprobs.slice();
				l[i] += d;
				return sftLossAndGrad({ ...batch, logprobs: l }).loss;
			};
			return (at(h) - at(-h)) / (2 * h);
		});
		expect(r.dLogprobs).toBeAllclose(fd, { atol: 1e-8, rtol: 1e-6 });
	});

	it("micro-batches with the step's token count sum to the one-batch loss", () => {
		const a = sftLossAndGrad({ B: 1, logprobs: [-1, -2, NaN], mask: [1, 1, 0] }, 3);
		const b = sftLossAndGrad({ B: 1, logprobs: [-4, -0.5], mask: [0, 1] }, 3);
		expect(a.loss + b.loss).toBeCloseTo(3.5 / 3, 15);
		expect(Array.from(a.dLogprobs)).toEqual(
			Array.from(sftLossAndGrad(batch).dLogprobs.slice(0, 3))
		);
		// Each alone would normalise by itself: (1.5) + (0.5) = 2, not 1.1667.
		expect(sftLossAndGrad({ B: 1, logprobs: [-1, -2, NaN], mask: [1, 1, 0] }).loss).toBe(1.5);
	});

	it('bad input', () => {
		expect(() => sftLossAndGrad(batch, 2)).toThrow(InvalidBatchError); // fewer than its own
		expect(() => sftLossAndGrad({ ...batch, mask: [1, 1] })).toThrow(InvalidBatchError);
		expect(() => sftLossAndGrad({ ...batch, logprobs: [NaN, -2, 0, 0, -1, 0] })).toThrow(
			InvalidBatchError
		);
		expect(sftLossAndGrad({ B: 1, logprobs: [-1], mask: [0] }).loss).toBe(0);
	});
});
