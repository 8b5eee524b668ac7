/**
 * @file 2048 as an Environment (environment.ts): ART's game (rules.ts, rollout.ts), each game
 * of a group on its own board, the random and expert players (policies.ts), the expert's
 * moves with DART's exploration for SFT (demonstrations.ts), the studio's replay, and its
 * preset: ART's train.py target (128) from the shipped warm start, the board alone each turn.
 */
import type { Environment } from '../environment';
import { mean, meanMetrics, sampling } from '../environment';
import { gameSeed } from '../seeds';
import { demonstrationConversations } from './demonstrations';
import { expertPolicy, randomPolicy } from './policies';
import { replay } from './replay';
import { rollout } from './rollout';

export const game2048Environment: Environment<'2048'> = {
	name: '2048',
	describe:
		"2048 as ART plays it: the board as text, the move as <move>left</move>; reaching the winning tile scores 2, otherwise a score of the largest tile and the board's sum; a malformed reply -1.",
	rollout: (client, r) =>
		rollout(client, {
			model: r.model,
			seed: gameSeed(r.scenario, r.index),
			winningValue: r.options.winningValue,
			historyTurns: r.options.historyTurns,
			maxMoves: r.options.maxTurns ?? null,
			onInvalidReply: r.options.onInvalidReply,
			maxTokens: r.maxTokens,
			signal: r.signal,
			request: { temperature: r.temperature, ...sampling(r) }
		}),
	// Each turn the model read is a conversation (one per turn with a history window).
	demonstrations: (count, seed, options, style) =>
		demonstrationConversations(count, seed, { ...options, explore: style?.explore }),
	evalMetrics: (games) => ({
		...meanMetrics(games, ['win', 'max_value', 'num_moves']),
		invalid: mean(games.map((t) => (t.metadata.outcome === 'invalid' ? 1 : 0)))
	}),
	outcome: (t) => ({
		won: t.metadata.outcome === 'win',
		moves: Number(t.metrics.num_moves ?? 0),
		illegal: t.metadata.outcome === 'invalid'
	}),
	scripted: (kind, r) =>
		kind === 'expert' ? expertPolicy() : randomPolicy(gameSeed(r.scenario, r.index) ^ 0x2048),
	replay: (t) => replay(t),
	recipe: {
		title: '2048 to 128 (from a warm start)',
		bundledModel: 'tabrl-tiny-2048',
		fromWarmStart: true,
		// lr 1e-4: every GRPO run from the shipped warm start used it; 16 x 8 games reached a
		// win of 0.83 at step 30 (BENCHMARKS.md, "2048 from the shipped warm start (G3)").
		// A game is ~85 replies in turn, so a step takes seconds at any size (4 x 8: ~7 s on
		// an H200, 16 x 8: ~15 s on an H100): auto keeps to 12-20 s, not 2-4, and grows the
		// groups where a GPU plays more in nearly the same time
		grpo: {
			learningRate: 1e-4,
			groups: 4,
			groupSize: 8,
			maxTokens: 16,
			tokenBudget: 32768,
			autoSize: { minGroups: 4, maxGroups: 32, stepSeconds: { low: 12, high: 20 } }
		},
		// ART's train.py plays to 128; the board alone each turn (2048 is Markov: the board
		// is the whole state), so a game of ~70 moves is ~70 short conversations
		envOptions: { winningValue: 128, historyTurns: 0 },
		// Conversations, one per move (a game is ~85), so 131072 are ~1500 games. DART: a
		// quarter of the demonstrating moves played at random (replies the expert's), and 4x
		// the moves in batches of 128: greedy win 0.40 vs 0.025 for 32768 expert-only moves in
		// batches of 64 (BENCHMARKS.md, "Environments ...")
		warmStartSft: { games: 131072, batchSize: 128, explore: 0.25 },
		// on a software GPU: one group of 4, played to 16 (a game of ~10 moves, not ~85)
		pretrained: { maxTokens: 128, maxContext: 2048 },
		softwareGpu: {
			games: { exactly: { groups: 1, groupSize: 4 } },
			lora: { rank: 8, alpha: 16 },
			eval: { every: 5, games: 4 },
			// to 16 the warm start wins every game (no spread); to 32 a game takes ~33 moves
			// there (12 minutes for 4 games): 32 within 20 moves scores each game by its tiles
			envOptions: { winningValue: 32, maxTurns: 20 },
			scaled: 'games play to the 32 tile in at most 20 moves'
		}
	}
};
