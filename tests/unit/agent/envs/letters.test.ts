/**
 * The letters environment's own rules (src/lib/agent/envs/letters/): the reward is the
 * share of a reply's characters in a-m, the expert always scores 1, the random player
 * rarely does, and a game replays as prompt, reply and reward.
 */
import { describe, expect, it } from 'vitest';
import { policyClient } from '../../../../src/lib/agent/policy-client';
import {
	expertPolicy,
	lettersReward,
	PROMPT,
	randomPolicy,
	replay,
	rollout
} from '../../../../src/lib/agent/envs/letters';

describe('letters', () => {
	it('rewards the share of characters in a-m', () => {
		expect(lettersReward('abcm')).toBe(1);
		expect(lettersReward('zz')).toBe(0);
		expect(lettersReward('a z')).toBeCloseTo(1 / 3);
		expect(lettersReward('')).toBe(0);
	});

	it('the expert scores 1, the random player about half as well; the replay shows the game', async () => {
		const mean = async (player: typeof expertPolicy) => {
			let sum = 0;
			for (let seed = 0; seed < 50; seed++)
				sum += (await rollout(policyClient(player(seed)), { model: 'p' })).reward;
			return sum / 50;
		};
		expect(await mean(expertPolicy)).toBe(1);
		expect(await mean(randomPolicy)).toBeLessThan(0.7);
		const t = await rollout(policyClient(expertPolicy(3)), { model: 'p' });
		const items = replay(t);
		expect(items[0]).toEqual({ kind: 'message', role: 'user', text: PROMPT });
		expect(items.at(-1)).toEqual({ kind: 'outcome', text: 'share of a–m letters', reward: 1 });
	});
});
