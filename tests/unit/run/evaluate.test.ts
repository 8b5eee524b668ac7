/**
 * An evaluation's settings (src/lib/run/evaluate.ts): it plays the run's environment options
 * with its evaluation's over them. Tic-tac-toe, a random legal player, 60 held-out games: the
 * run trains against minimax (which it never beats), its evaluation plays the random opponent
 * (which it beats now and then), and without the override the evaluation plays minimax too.
 */
import { describe, expect, it } from 'vitest';
import { policyClient } from '../../../src/lib/agent/policy-client';
import { tictactoeEnvironment } from '../../../src/lib/agent/envs/tictactoe/environment';
import { legalRandomPolicy } from '../../../src/lib/agent/envs/tictactoe/rollout';
import { evalEnvOptions, evaluateOnce } from '../../../src/lib/run/evaluate';
import { preset } from '../../../src/lib/run/presets';
import type { Recipe } from '../../../src/lib/run/recipe';

const againstMinimax: Recipe = { ...preset('tictactoe'), envOptions: { opponent: 'perfect' } };
const measuredAgainstRandom: Recipe = {
	...againstMinimax,
	eval: { ...againstMinimax.eval, envOptions: { opponent: 'random' } }
};

const winRate = async (recipe: Recipe) => {
	const client = policyClient(legalRandomPolicy(3));
	const report = await evaluateOnce(
		tictactoeEnvironment,
		client as Parameters<typeof evaluateOnce>[1],
		'random-player',
		recipe,
		{ temperature: 0, games: 60 },
		0
	);
	expect(report.games).toBe(60);
	return report.metrics.win;
};

describe('evaluateOnce', () => {
	it("plays the evaluation's environment options over the run's", async () => {
		expect(evalEnvOptions(measuredAgainstRandom)).toEqual({ opponent: 'random' });
		expect(evalEnvOptions(againstMinimax)).toEqual({ opponent: 'perfect' });
		expect(await winRate(againstMinimax)).toBe(0);
		expect(await winRate(measuredAgainstRandom)).toBeGreaterThan(0.15);
	});
});
