/**
 * @file Letters as an Environment (../environment.ts): one seeded reply per game
 * (rollout.ts), scored by the rules (rules.ts); scripted players (policies.ts); the studio's
 * replay (replay.ts); no demonstrations (it learns from the random model); and its preset,
 * GRPO from the bundled model itself, few small steps.
 */
import type { Environment } from '../environment';
import { playerSeed } from '../seeds';
import { expertPolicy, randomPolicy } from './policies';
import { replay } from './replay';
import { rollout } from './rollout';

export const lettersEnvironment: Environment<'letters'> = {
	name: 'letters',
	describe:
		"Say a word: the reward is the share of the reply's characters in a–m (random ≈ 0.1, learned ≈ 1).",
	async rollout(client, r) {
		r.signal?.throwIfAborted();
		return rollout(client, {
			model: r.model,
			seed: r.samplingSeed ?? undefined,
			maxTokens: r.maxTokens,
			temperature: r.temperature,
			logprobs: r.logprobs
		});
	},
	evalMetrics: () => ({}),
	outcome: () => ({ moves: 1, illegal: false }),
	scripted: (kind, r) =>
		(kind === 'expert' ? expertPolicy : randomPolicy)(playerSeed(r.scenario, r.index)),
	replay: (t) => replay(t),
	recipe: {
		title: 'Letters a–m (from scratch)',
		bundledModel: 'tabrl-tiny',
		fromWarmStart: false,
		grpo: {
			steps: 20,
			groups: 4,
			groupSize: 8,
			// tabrl-tiny's LM head is scaled to reach logits of 40 (scripts/tictactoe-model.ts),
			// so its policy is sensitive: at 1e-3 and above (with or without KL) it collapses
			// to one reply (" tic tic tic tic", reward 0.5) within two steps; 2e-4 climbs
			// 0.07 -> 0.50 in 5 steps of 2 x 8 games with a spread left (SwiftShader, seed 1)
			learningRate: 2e-4,
			klBeta: 0,
			maxTokens: 4,
			tokenBudget: 8192
		},
		lora: { rank: 8, alpha: 16 },
		eval: { every: 5, games: 8, temperatures: [0] },
		// one 4-token reply, so a group of 8 costs little there and keeps a spread
		pretrained: { maxTokens: 16, maxContext: 256 },
		softwareGpu: {
			games: { atMost: { groups: 2, groupSize: 8 } },
			eval: { every: 5, games: 8 },
			learnsVisibly: 'its reward rises from near 0 to about 0.6 within 10 steps, a few minutes'
		}
	}
};
