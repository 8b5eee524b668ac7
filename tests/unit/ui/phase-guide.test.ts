/**
 * The step-through view's text (ui/phase-guide.ts): each pause's title in a step's order, the
 * reward named per environment and for RULER, a group's advantages worked through with its
 * own numbers (mean, spread: as groupAdvantages computes them) or said to teach nothing
 * without spread, the loss as the recipe has it (CISPO or PPO, KL or none, the learning
 * rate), and the step's numbers after the update.
 */
import { describe, expect, it } from 'vitest';
import { groupAdvantages } from '../../../src/lib/grpo/advantages';
import { preset, type Recipe } from '../../../src/lib/run';
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

	it("works one group's advantages through with its numbers", () => {
		const text = phaseGuide('advantages', {
			recipe: ttt,
			step: 3,
			group: { group: 0, games: games([1, 0, 0.5, 0]).reverse() } // any order: shown by index
		}).paragraphs.join(' ');
		// mean 0.375, population spread sqrt(0.171875) = 0.415; (1 - 0.375) / 0.415 = 1.51
		expect(text).toContain('Group 1: rewards 1, 0, 0.5, 0 → mean 0.375, spread 0.415');
		expect(text).toContain('advantages +1.51, −0.9, +0.3, −0.9');
		const flat = phaseGuide('advantages', {
			recipe: ttt,
			step: 3,
			group: { group: 2, games: games([0.5, 0.5]) }
		}).paragraphs.join(' ');
		expect(flat).toContain('Group 3: every game scored 0.5, so every advantage is 0');
	});

	it('explains the loss the recipe uses', () => {
		const cispo = phaseGuide('update', { recipe: ttt, step: 3 }).paragraphs.join(' ');
		expect(cispo).toContain('CISPO');
		expect(cispo).toContain('β = 0.05');
		expect(cispo).toContain('learning rate 0.0005');
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
	});
});
