/** A recipe's evaluations in words (src/lib/ui/evaluation-plan.ts), as the run loop picks them. No GPU. */
import { describe, expect, it } from 'vitest';
import { forSoftwareGpu, preset } from '../../../src/lib/run';
import { evaluatedSteps, evaluationPlan } from '../../../src/lib/ui/evaluation-plan';

describe('evaluationPlan', () => {
	it('lists step 0, every N-th and the last', () => {
		const at = (every: number, steps: number) =>
			evaluatedSteps({
				eval: { every, games: 1, temperatures: [0] },
				grpo: { ...preset('letters', '/').grpo, steps }
			});
		expect(at(5, 10)).toEqual([0, 5, 10]);
		expect(at(4, 10)).toEqual([0, 4, 8, 10]);
		expect(at(1, 2)).toEqual([0, 1, 2]);
		expect(at(0, 10)).toEqual([]);
	});

	it("says what a software GPU's tic-tac-toe evaluates, and when", () => {
		expect(evaluationPlan(forSoftwareGpu(preset('tictactoe', '/')))).toBe(
			"Evaluations: 4 held-out games at steps 0, 5 and 10, each played after the next step's " +
				'games (the same policy), so games show first.'
		);
		const r = preset('letters', '/');
		expect(
			evaluationPlan({
				...r,
				grpo: { ...r.grpo, steps: 0 },
				eval: { ...r.eval, every: 1, games: 1 }
			})
		).toBe('Evaluations: 1 held-out game at step 0.');
		expect(evaluationPlan({ ...r, eval: { ...r.eval, every: 0 } })).toBe('No evaluations.');
	});
});
