/**
 * @file Where every seed of a run derives, so a run repeats from its recipe's seed alone
 * and no two places can drift apart. A GRPO round plays groups of games: each group a
 * scenario seed (scenarioSeed), each game of a group its index; from (scenario, index) come
 * the game's own draws (gameSeed, playerSeed) and the sampling seed of its first request
 * (samplingSeed; turn t samples with that seed + t: agent/envs/turn-request.ts).
 * Evaluations play scenarios EVAL_SEED + i, far above any training scenario.
 *
 * The numbers are the recipe's contract: changing one changes every run's games.
 */
import { Rng } from '../../util/random';

/** Seeds of the evaluation games: EVAL_SEED + i, disjoint from training scenarios. */
export const EVAL_SEED = 900_000_000;

/** Games of a group with distinct seeds (a group's index is below this). */
const GAMES_PER_SCENARIO = 64;

/** Sampling seeds of two games start this far apart: room for each turn's seed + t. */
const TURNS_PER_GAME = 16;

/** The scenario of group `group` in GRPO round `round` (round = step * 16 + retry). */
export const scenarioSeed = (runSeed: number, round: number, group: number): number =>
	(runSeed * 1_000_003 + round * 1009 + group) >>> 0;

/** The seed of game `index`'s own draws in its group (a scripted player's, a game's). */
export const playerSeed = (scenario: number, index: number): number =>
	scenario * GAMES_PER_SCENARIO + index;

/** A game's seed where each game of a group is its own: the first plays the scenario itself. */
export const gameSeed = (scenario: number, index: number): number =>
	index === 0 ? scenario : new Rng(playerSeed(scenario, index)).int(2 ** 31);

/**
 * A game whose group shares one choice: one generator from the scenario draws the choice
 * (one of `choices`, e.g. tic-tac-toe's mark), then a seed per game in index order.
 */
export function sharedChoiceGame(
	scenario: number,
	index: number,
	choices: number
): { choice: number; seed: number } {
	const draws = new Rng(scenario);
	const choice = draws.int(choices);
	let seed = draws.int(2 ** 31);
	for (let k = 0; k < index; k++) seed = draws.int(2 ** 31);
	return { choice, seed };
}

/**
 * The sampling seed of game `index`'s first request in the group of `scenario` (an
 * evaluation passes its game number and index 0). Below 2^31 (the scenario taken modulo a
 * million), so every server takes it.
 */
export const samplingSeed = (scenario: number, index: number): number =>
	playerSeed(scenario % 1_000_000, index) * TURNS_PER_GAME;

/** The seed of the SFT demonstrations' order in `epoch` (the demonstrations use `sftSeed`). */
export const sftOrderSeed = (sftSeed: number, epoch: number): number => sftSeed + 1000 + epoch;
