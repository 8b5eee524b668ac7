/**
 * @file The Train panel's reward choice as plain functions: the recipe's `reward` a form
 * describes (none for the game's own), each field's errors from the run layer's own
 * validateRecipe (same words the worker would use), and what a step's judge metrics say.
 * The judge's API key never enters a recipe.
 */
import {
	RunError,
	validateRecipe,
	type Recipe,
	type RewardConfig,
	type RewardSource
} from '../run';

export interface RewardForm {
	source: RewardSource;
	baseURL: string;
	model: string;
	/** Empty: ART's default rubric. */
	rubric: string;
}

/** The form's fields that can be wrong ('source': the choice itself, for this preset). */
export type RewardField = 'source' | 'baseURL' | 'model' | 'rubric';

export const REWARD_TITLES: Record<RewardSource, string> = {
	env: "The game's reward",
	ruler: 'RULER: a judge LLM scores each group',
	'ruler+env': "RULER + the game's reward"
};

/** The recipe's reward as the form describes it; undefined for the game's own. */
export function rewardOf(form: RewardForm): RewardConfig | undefined {
	if (form.source === 'env') return undefined;
	const rubric = form.rubric.trim();
	return {
		source: form.source,
		judge: { baseURL: form.baseURL.trim(), model: form.model.trim() },
		...(rubric ? { rubric } : {})
	};
}

/** validateRecipe's field names -> the form's, for the fields the reward choice decides. */
const FIELDS: Record<string, RewardField> = {
	'reward.source': 'source',
	'reward.judge.baseURL': 'baseURL',
	'reward.judge.model': 'model',
	'reward.rubric': 'rubric',
	// only when RULER asks for it (2048 played one move per conversation)
	'envOptions.historyTurns': 'source'
};

/** `recipe` with `path` set to a value validateRecipe takes, to look for the next error. */
function mended(recipe: Recipe, path: string): Recipe {
	const reward = recipe.reward!;
	const judge = reward.judge ?? { baseURL: '', model: '' };
	switch (path) {
		case 'reward.judge.baseURL':
			return { ...recipe, reward: { ...reward, judge: { ...judge, baseURL: 'http://judge/v1' } } };
		case 'reward.judge.model':
			return { ...recipe, reward: { ...reward, judge: { ...judge, model: 'judge' } } };
		case 'reward.rubric':
			return { ...recipe, reward: { ...reward, rubric: undefined } };
		case 'envOptions.historyTurns':
			return { ...recipe, envOptions: { ...recipe.envOptions, historyTurns: null } };
		default:
			return { ...recipe, reward: { ...reward, source: 'ruler' } };
	}
}

/**
 * Each reward field's error in `recipe`, as validateRecipe words it ("reward.judge.model must
 * be the judge model's name, not \"\"."), without the field's path where the page shows it
 * next to the field. Empty when the reward is the game's or every field is right. Errors of
 * other fields (steps, learning rate) are left to the worker, as before.
 */
export function rewardErrors(recipe: Recipe): Partial<Record<RewardField, string>> {
	const out: Partial<Record<RewardField, string>> = {};
	if (!recipe.reward || recipe.reward.source === 'env') return out;
	let r = recipe;
	for (let i = 0; i < Object.keys(FIELDS).length; i++) {
		try {
			validateRecipe(r);
			return out;
		} catch (error) {
			if (!(error instanceof RunError) || error.kind !== 'invalid-recipe') return out;
			const path = error.message.split(' ', 1)[0];
			const field = FIELDS[path];
			if (!field || out[field]) return out;
			if (path === 'envOptions.historyTurns' && !error.message.includes('RULER')) return out;
			out[field] =
				field === 'source'
					? `RULER cannot judge this preset as it is played: ${error.message}`
					: error.message.slice(path.length + 1).replace(/^./, (c) => c.toUpperCase());
			r = mended(r, path);
		}
	}
	return out;
}

/** What the judge did in one step, from its metrics (null: not judged by RULER). */
export interface JudgeStep {
	/** Mean judge score and mean game reward of the trajectories trained on. */
	score: number | null;
	game: number | null;
	/** Groups the judge failed on (dropped, never trained on). */
	dropped: number;
	promptTokens: number;
	completionTokens: number;
	/** Where the endpoint reports it (OpenRouter: USD). */
	cost: number;
	latencyMs: number;
}

const num = (m: Record<string, unknown>, key: string) =>
	typeof m[key] === 'number' && Number.isFinite(m[key]) ? (m[key] as number) : null;

/** A step's judge metrics (the run loop's train/ruler_* names), or null without any. */
export function judgeStep(metrics: Record<string, unknown>): JudgeStep | null {
	const dropped = num(metrics, 'train/ruler_dropped_groups');
	const score = num(metrics, 'train/ruler_score');
	if (dropped === null && score === null) return null;
	return {
		score,
		game: num(metrics, 'train/independent_reward'),
		dropped: dropped ?? 0,
		promptTokens: num(metrics, 'train/ruler_judge_prompt_tokens') ?? 0,
		completionTokens: num(metrics, 'train/ruler_judge_completion_tokens') ?? 0,
		cost: num(metrics, 'train/ruler_judge_cost') ?? 0,
		latencyMs: num(metrics, 'train/ruler_judge_latency_ms') ?? 0
	};
}
