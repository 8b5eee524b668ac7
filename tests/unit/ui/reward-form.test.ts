/**
 * The Train panel's reward choice (ui/reward-form.ts): the game's reward leaves the recipe as
 * it was (no `reward`); RULER's fields become `reward` (trimmed, an empty rubric absent);
 * each wrong field gets validateRecipe's own words, several at once; 2048 as the preset plays
 * it is refused for RULER on the choice itself; a step's judge metrics are read back.
 */
import { describe, expect, it } from 'vitest';
import { preset, validateRecipe, type Recipe } from '../../../src/lib/run';
import {
	judgeStep,
	rewardErrors,
	rewardOf,
	type RewardForm
} from '../../../src/lib/ui/reward-form';

const form = (over: Partial<RewardForm> = {}): RewardForm => ({
	source: 'ruler',
	baseURL: 'http://127.0.0.1:11434/v1',
	model: 'qwen3:8b',
	rubric: '',
	...over
});
const withReward = (f: RewardForm, name: 'letters' | '2048' = 'letters'): Recipe => {
	const reward = rewardOf(f);
	return { ...preset(name), ...(reward ? { reward } : {}) };
};

describe('the reward form', () => {
	it("the game's reward: no reward field, the preset's recipe unchanged, no errors", () => {
		expect(rewardOf(form({ source: 'env', baseURL: '' }))).toBeUndefined();
		const r = withReward(form({ source: 'env', baseURL: 'nonsense' }));
		expect(r).toEqual(preset('letters'));
		expect(rewardErrors(r)).toEqual({});
	});

	it('RULER: the judge from the fields, trimmed; an empty rubric is the default', () => {
		expect(rewardOf(form({ baseURL: ' https://api.openai.com/v1 ', model: ' gpt-4o ' }))).toEqual({
			source: 'ruler',
			judge: { baseURL: 'https://api.openai.com/v1', model: 'gpt-4o' }
		});
		expect(rewardOf(form({ source: 'ruler+env', rubric: '  \n ' }))).not.toHaveProperty('rubric');
		expect(rewardOf(form({ rubric: ' Be strict. \n' }))?.rubric).toBe('Be strict.');
		const r = withReward(form());
		expect(rewardErrors(r)).toEqual({});
		expect(validateRecipe(r)).toBe(r);
	});

	it("each wrong field gets validateRecipe's words, all at once", () => {
		const errors = rewardErrors(withReward(form({ baseURL: '', model: ' ' })));
		expect(Object.keys(errors).sort()).toEqual(['baseURL', 'model']);
		expect(errors.baseURL).toMatch(/^Must be an http\(s\) URL of an OpenAI-compatible API/);
		expect(errors.model).toMatch(/^Must be the judge model's name/);
		expect(rewardErrors(withReward(form({ baseURL: 'ftp://judge/v1' }))).baseURL).toMatch(
			/not "ftp:\/\/judge\/v1"/
		);
		expect(rewardErrors(withReward(form({ baseURL: 'localhost:11434' }))).baseURL).toBeDefined();
		// the same recipe is refused by the worker with the path in front
		expect(() => validateRecipe(withReward(form({ baseURL: '' })))).toThrow(
			/^reward\.judge\.baseURL must be/
		);
	});

	it('2048 as its preset plays it (one move per conversation): RULER refused on the choice', () => {
		const errors = rewardErrors(withReward(form({ model: '' }), '2048'));
		expect(errors.model).toBeDefined();
		expect(errors.source).toMatch(
			/^RULER cannot judge this preset as it is played: .*historyTurns/
		);
		expect(rewardErrors(withReward(form({ source: 'env' }), '2048'))).toEqual({});
	});

	it('other fields are left to the worker', () => {
		const r = { ...withReward(form({ model: '' })), baseModel: '' };
		expect(Object.keys(rewardErrors(r))).toEqual(['model']);
	});

	it("a step's judge metrics; none without RULER", () => {
		expect(judgeStep({ 'train/reward': 0.5, 'train/loss': 0.1 })).toBeNull();
		expect(
			judgeStep({
				'train/reward': 0.4,
				'train/ruler_score': 0.4,
				'train/independent_reward': 0.6,
				'train/ruler_dropped_groups': 1,
				'train/ruler_judge_prompt_tokens': 200,
				'train/ruler_judge_completion_tokens': 40,
				'train/ruler_judge_latency_ms': 900
			})
		).toEqual({
			score: 0.4,
			game: 0.6,
			dropped: 1,
			promptTokens: 200,
			completionTokens: 40,
			cost: 0,
			latencyMs: 900
		});
		// a round the judge failed on entirely: only the dropped count
		expect(judgeStep({ 'train/ruler_dropped_groups': 2 })).toMatchObject({
			score: null,
			game: null,
			dropped: 2
		});
	});
});
