/**
 * The step-through view's text (ui/phase-guide.ts): each pause's title in a step's order, the
 * reward named per environment and for RULER, a group's advantages worked through with its
 * own numbers (mean, spread: as groupAdvantages computes them) or said to teach nothing
 * without spread, the loss as the recipe has it (CISPO or PPO, KL or none, the learning
 * rate), and the step's numbers after the update.
 */
import { describe, expect, it } from 'vitest';
import { groupAdvantages } from '../../../src/lib/grpo/advantages';
import { DEFAULT_SFT, preset, type Recipe } from '../../../src/lib/run';
import { phaseGuide } from '../../../src/lib/ui/phase-guide';

const ttt = preset('tictactoe', '/');
const games = (rewards: number[]) => {
	const { advantages } = groupAdvantages(rewards);
	return rewards.map((reward, i) => ({ index: i, reward, advantage: advantages[i] }));
};

describe('phase guide', () => {
	it('names the reward of each environment, and RULER when it judges', () => {
		const g = phaseGuide('rewards', { recipe: ttt, step: 0 });
		expect(g.title).toBe('1 · Games played, rewards given');
		expect(g.paragraphs.join(' ')).toContain('8 groups of 8 games');
		expect(g.paragraphs.join(' ')).toContain('a win 1, a draw 0.5');
		const judged: Recipe = {
			...ttt,
			reward: { source: 'ruler', judge: { baseURL: 'http://x/v1', model: 'm' } }
		};
		expect(phaseGuide('rewards', { recipe: judged, step: 0 }).paragraphs.join(' ')).toContain(
			'RULER'
		);
		expect(phaseGuide('rewards', { recipe: preset('2048', '/'), step: 0 }).paragraphs[1]).toContain(
			'winning tile'
		);
	});

	it("works one group's advantages through with its numbers, in its cards' order", () => {
		const text = phaseGuide('advantages', {
			recipe: ttt,
			step: 3,
			group: { group: 0, games: games([1, 0, 0.5, 0]).reverse(), shown: 4 }, // as the cards show them
			signal: true
		}).paragraphs.join(' ');
		// mean 0.375, population spread sqrt(0.171875) = 0.415; (1 - 0.375) / 0.415 = 1.51
		expect(text).toContain(
			'Group 1 (its cards are outlined below, in the order shown): rewards 0, 0.5, 0, 1 → mean 0.375, spread 0.415'
		);
		expect(text).toContain('advantages −0.9, +0.3, −0.9, +1.51');
		const partly = phaseGuide('advantages', {
			recipe: ttt,
			step: 3,
			group: { group: 1, games: games([1, 0, 0.5, 0]), shown: 3 }
		}).paragraphs.join(' ');
		expect(partly).toContain('3 of its 4 games are the outlined cards below');
		const flat = phaseGuide('advantages', {
			recipe: ttt,
			step: 3,
			group: { group: 2, games: games([0.5, 0.5]), shown: 0 }
		}).paragraphs.join(' ');
		expect(flat).toContain('Group 3: every game scored 0.5, so every advantage is 0');
	});

	it('a round where no group has a spread says nothing is learned and why, and what comes next', () => {
		const group = { group: 0, games: games([1, 1, 1, 1]), shown: 4 };
		const adv = phaseGuide('advantages', { recipe: ttt, step: 2, group, signal: false });
		expect(adv.paragraphs.join(' ')).toContain('No group of this round has a spread');
		expect(adv.next).toBe('Next: why nothing is learned');
		const none = phaseGuide('update', { recipe: ttt, step: 2, group, signal: false });
		expect(none.title).toBe('3 · No update this time');
		expect(none.paragraphs.join(' ')).toContain('nothing was learned from these games');
		expect(none.paragraphs.join(' ')).toContain('a new round of games for step 2');
		expect(none.next).toBe('Next: play new games');
		// with a spread somewhere, the update is explained as usual
		expect(phaseGuide('update', { recipe: ttt, step: 2, group, signal: true }).title).toBe(
			'3 · The update'
		);
	});

	it('explains the loss the recipe uses', () => {
		const cispo = phaseGuide('update', { recipe: ttt, step: 3 }).paragraphs.join(' ');
		expect(cispo).toContain('CISPO');
		expect(cispo).toContain('β = 0.05');
		expect(cispo).toContain('learning rate 0.0005;');
		// while the rate warms up (the preset's first 3 GRPO steps) the guide says the share
		const first = phaseGuide('update', { recipe: ttt, step: 0 }).paragraphs.join(' ');
		expect(first).toContain('learning rate 0.000167: 1 / 3 of the 0.0005 set');
		const sftFirst: Recipe = {
			...ttt,
			sft: { ...DEFAULT_SFT, games: 64, batchSize: 32, epochs: 1 }
		};
		// after 2 SFT steps, step 3 is GRPO's second: 2 / 3
		expect(phaseGuide('update', { recipe: sftFirst, step: 3 }).paragraphs.join(' ')).toContain(
			'learning rate 0.000333: 2 / 3 of the 0.0005 set'
		);
		const ppo = phaseGuide('update', {
			recipe: { ...ttt, grpo: { ...ttt.grpo, loss: 'ppo', klBeta: 0 } },
			step: 3
		}).paragraphs.join(' ');
		expect(ppo).toContain('PPO-clip');
		expect(ppo).toContain('no KL penalty');
		expect(ppo).not.toContain('CISPO');
	});

	it("reports the step's numbers after the update", () => {
		const g = phaseGuide('updated', {
			recipe: ttt,
			step: 4,
			metrics: {
				'train/reward': 0.625,
				'train/loss': 0.01234,
				'train/kl': 0.0005,
				'train/grad_norm': 1.5
			}
		});
		expect(g.title).toBe('4 · Step 4 done');
		expect(g.paragraphs[0]).toContain(
			'Mean reward of these games 0.625; loss 0.0123, KL to the reference 0.0005, gradient norm 1.5'
		);
		expect(phaseGuide('updated', { recipe: ttt, step: 4 }).paragraphs[0]).toContain('loss —');
		// the charts it reads from are the ones outlined, and only after the update
		expect(g.paragraphs[0]).toContain('outlined chart');
		expect(g.charts).toEqual(['reward', 'loss', 'kl', 'grad']);
		expect(phaseGuide('updated', { recipe: ttt, step: 4, metrics: {} }).charts).toEqual([
			'reward',
			'loss',
			'grad'
		]);
		for (const phase of ['rewards', 'advantages', 'update'] as const)
			expect(phaseGuide(phase, { recipe: ttt, step: 4 }).charts).toBeUndefined();
	});
});
