/**
 * Where seeds derive (src/lib/agent/envs/seeds.ts): each function gives the numbers the
 * run loop, the evaluations and the environments used when they each wrote the formula
 * inline, so a recipe's games are the same as before. The formulas below are those.
 */
import { describe, expect, it } from 'vitest';
import {
	EVAL_SEED,
	gameSeed,
	playerSeed,
	samplingSeed,
	scenarioSeed,
	sftOrderSeed,
	sharedChoiceGame
} from '../../../../src/lib/agent/envs/seeds';
import { Rng } from '../../../../src/lib/util/random';

const rng = new Rng(17);
const cases = Array.from({ length: 200 }, () => ({
	seed: rng.int(1000),
	round: rng.int(3000),
	group: rng.int(64),
	index: rng.int(64),
	i: rng.int(5000)
}));

describe('seeds', () => {
	it('evaluations play from 900 000 000', () => expect(EVAL_SEED).toBe(900_000_000));

	it('a round plays scenarios seed * 1 000 003 + round * 1009 + group, unsigned 32-bit', () => {
		for (const c of cases)
			expect(scenarioSeed(c.seed, c.round, c.group)).toBe(
				(c.seed * 1_000_003 + c.round * 1009 + c.group) >>> 0
			);
		expect(scenarioSeed(5000, 0, 0)).toBe(5_000_015_000 >>> 0);
	});

	it("a game's sampling seed: ((scenario mod 1e6) * 64 + index) * 16; game i of an evaluation i * 1024", () => {
		for (const c of cases) {
			const scenario = scenarioSeed(c.seed, c.round, c.group);
			const seed = samplingSeed(scenario, c.index);
			expect(seed).toBe(((scenario % 1_000_000) * 64 + c.index) * 16);
			expect(seed).toBeLessThan(2 ** 31);
			expect(samplingSeed(c.i, 0)).toBe(c.i * 64 * 16);
		}
	});

	it("players' and games' own seeds: scenario * 64 + index; game 0 plays the scenario", () => {
		for (const c of cases) {
			const scenario = scenarioSeed(c.seed, c.round, c.group);
			expect(playerSeed(scenario, c.index)).toBe(scenario * 64 + c.index);
			expect(gameSeed(scenario, c.index)).toBe(
				c.index === 0 ? scenario : new Rng(scenario * 64 + c.index).int(2 ** 31)
			);
		}
	});

	it('a shared choice, then one seed per game, from one generator of the scenario', () => {
		for (const c of cases.slice(0, 20)) {
			const draws = new Rng(c.seed);
			const choice = draws.int(2);
			const seeds = Array.from({ length: c.index + 1 }, () => draws.int(2 ** 31));
			expect(sharedChoiceGame(c.seed, c.index, 2)).toEqual({ choice, seed: seeds[c.index] });
		}
	});

	it("the SFT demonstrations' order in epoch e: seed + 1000 + e", () => {
		expect(sftOrderSeed(50, 0)).toBe(1050);
		expect(sftOrderSeed(7, 3)).toBe(1010);
	});
});
