/**
 * @file Tic-tac-toe as an Environment (environment.ts): the game (rules.ts, rollout.ts)
 * against a random opponent, seeded per group and game, its scripted player, the warm
 * start's demonstrations (perfect play against the random opponent), what an evaluation reports, and its preset:
 * the measured research setup at a tab's size (BENCHMARKS.md).
 */
import type { Environment } from '../environment';
import { mean, sampling } from '../environment';
import { playerSeed, sharedChoiceGame } from '../seeds';
import { legalPlayTranscripts } from './demonstrations';
import { legalRandomPolicy, perfectPolicy, replay } from './policies';
import { rollout } from './rollout';

export const tictactoeEnvironment: Environment<'tictactoe'> = {
	name: 'tictactoe',
	describe:
		'Tic-tac-toe against a random opponent: the board as text, the move as <move>B2</move>; win 1, draw 0.5, loss 0, an illegal move below 0.',
	rollout(client, r) {
		// A group shares the agent's mark; each game draws its own opponent moves (ART's
		// groups are independent games), so a near-deterministic policy keeps a spread.
		const { choice, seed } = sharedChoiceGame(r.scenario, r.index, 2);
		return rollout(client, {
			model: r.model,
			seed,
			mark: choice === 0 ? 'x' : 'o',
			opponent: r.options.opponent,
			onInvalidReply: r.options.onInvalidReply,
			maxTokens: r.maxTokens,
			signal: r.signal,
			request: {
				temperature: r.temperature,
				// rollout adds the turn to the seed: 16 apart leaves room for every turn
				...sampling(r)
			}
		});
	},
	demonstrations: async (count, seed, _options, style) =>
		legalPlayTranscripts(count, seed, style?.skill ?? 0),
	outcome: (t) => ({
		won: t.metadata.outcome === 'win',
		drawn: t.metadata.outcome === 'draw',
		moves: Number(t.metrics.num_moves ?? 0),
		illegal: t.metadata.outcome === 'illegal'
	}),
	// the expert is the player the shipped warm start imitates: perfect play (minimax)
	scripted: (kind, r) =>
		(kind === 'expert' ? perfectPolicy : legalRandomPolicy)(playerSeed(r.scenario, r.index)),
	replay: (t) => replay(t),
	evalMetrics: (games) => ({
		illegal: mean(games.map((t) => (t.metadata.outcome === 'illegal' ? 1 : 0))),
		win: mean(games.map((t) => (t.metadata.outcome === 'win' ? 1 : 0))),
		score_x: mean(games.filter((t) => t.metadata.agent_symbol === 'x').map((t) => t.reward)),
		score_o: mean(games.filter((t) => t.metadata.agent_symbol === 'o').map((t) => t.reward))
	}),
	recipe: {
		title: 'Tic-tac-toe (from a warm start)',
		bundledModel: 'tabrl-tiny',
		fromWarmStart: true,
		// 64 x 8 games at lr 5e-4 reach +0.15 in 20 steps, 32 x 16 at 2e-4 in 25 (BENCHMARKS.md,
		// "Time to learn"): an H100 plays 512 games in ~2.7 s, so auto grows to 64 groups there
		grpo: {
			groups: 8,
			groupSize: 8,
			maxTokens: 16,
			tokenBudget: 32768,
			learningRate: 5e-4,
			// Adam's first update moves every weight by the whole rate: at 5e-4 over half the
			// next step's games went illegal; rising over 3 steps keeps them legal (BENCHMARKS.md)
			warmupSteps: 3,
			autoSize: { minGroups: 1, maxGroups: 64 }
		},
		// the shipped adapter's SFT: 32768 games of the agent playing perfectly against the random
		// opponent (its O games 0.82; GRPO then removes its X games' illegal moves: BENCHMARKS.md)
		warmStartSft: { games: 32768, skill: 1 },
		// a turn costs seconds per sequence on a software GPU: one group of 4
		// ART's rollout allows 128 reply tokens a move
		pretrained: { maxTokens: 128, maxContext: 1024 },
		softwareGpu: {
			games: { exactly: { groups: 1, groupSize: 4 } },
			lora: { rank: 8, alpha: 16 },
			// greedy games last to the board's end: 4 of them cost about a step here
			eval: { every: 5, games: 4 }
		}
	}
};
