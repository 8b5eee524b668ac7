/**
 * Recipes (src/lib/run/recipe.ts, presets.ts): validateRecipe refuses every field out of
 * range with a RunError of kind 'invalid-recipe' whose message names the field; the presets
 * and the warm-start recipe validate as shipped; sftSteps counts epochs x batches;
 * forSoftwareGpu shrinks a recipe without touching the original. No GPU.
 */
import { describe, expect, it } from 'vitest';
import {
	checkLiveSettings,
	recordedSettings,
	DEFAULT_SFT,
	forSoftwareGpu,
	preset,
	PRESET_NAMES,
	RunError,
	sftSteps,
	validateRecipe,
	warmStartRecipe,
	warmupFactor,
	LR_WARMUP,
	type Recipe
} from '../../../src/lib/run';

/** A valid recipe with every optional part present (SFT and a warm start). */
function full(): Recipe {
	return {
		...preset('tictactoe', '/root'),
		sft: { ...DEFAULT_SFT }
	};
}

type Mutation = [field: string, change: (r: Recipe) => void];

const BAD: Mutation[] = [
	['environment', (r) => ((r as { environment: string }).environment = 'chess')],
	['baseModel', (r) => (r.baseModel = '  ')],
	['warmStart', (r) => (r.warmStart = { adapter: '', mode: 'merged' })],
	['warmStart', (r) => (r.warmStart = { adapter: '/a', mode: 'fused' as 'merged' })],
	['grpo.steps', (r) => (r.grpo.steps = -1)],
	['grpo.steps', (r) => (r.grpo.steps = 1.5)],
	['grpo.groups', (r) => (r.grpo.groups = 0)],
	['grpo.groupSize', (r) => (r.grpo.groupSize = 1)],
	['grpo.learningRate', (r) => (r.grpo.learningRate = 0)],
	['grpo.learningRate', (r) => (r.grpo.learningRate = Number.NaN)],
	['grpo.warmupSteps', (r) => (r.grpo.warmupSteps = -1)],
	['grpo.warmupSteps', (r) => (r.grpo.warmupSteps = 2.5)],
	['grpo.loss', (r) => (r.grpo.loss = 'grpo' as 'cispo')],
	['grpo.klBeta', (r) => (r.grpo.klBeta = -0.1)],
	['grpo.temperature', (r) => (r.grpo.temperature = 0)],
	['grpo.maxTokens', (r) => (r.grpo.maxTokens = 0)],
	['grpo.tokenBudget', (r) => (r.grpo.tokenBudget = 2.5)],
	['grpo.autoSize', (r) => (r.grpo.autoSize = { minGroups: 8, maxGroups: 4 })],
	['grpo.iterations', (r) => (r.grpo.iterations = 0)],
	['grpo.miniBatches', (r) => (r.grpo.miniBatches = 65)],
	['eval.envOptions.opponent', (r) => (r.eval.envOptions = { opponent: 'minimax' as 'random' })],
	['eval.envOptions.maxTurns', (r) => (r.eval.envOptions = { maxTurns: 0 })],
	[
		'grpo.autoSize.stepSeconds',
		(r) => (r.grpo.autoSize = { minGroups: 1, maxGroups: 4, stepSeconds: { low: 5, high: 5 } })
	],
	[
		'grpo.autoSize.stepSeconds',
		(r) => (r.grpo.autoSize = { minGroups: 1, maxGroups: 4, stepSeconds: { low: 0, high: 5 } })
	],
	['sft.games', (r) => (r.sft!.games = 0)],
	['sft.batchSize', (r) => (r.sft!.batchSize = -4)],
	['sft.epochs', (r) => (r.sft!.epochs = 0)],
	['sft.learningRate', (r) => (r.sft!.learningRate = -1e-3)],
	['sft.learningRateEnd', (r) => (r.sft!.learningRateEnd = 0)],
	['sft.chunk', (r) => (r.sft!.chunk = 0)],
	['sft.seed', (r) => (r.sft!.seed = 0.5)],
	// tic-tac-toe's demonstrations do not explore (only 2048's do), and a share is below 1
	['sft.explore', (r) => (r.sft!.explore = 0.2)],
	// a share in [0, 1]
	['sft.skill', (r) => (r.sft!.skill = 1.5)],
	['lora.rank', (r) => (r.lora.rank = 0)],
	['lora.alpha', (r) => (r.lora.alpha = Number.POSITIVE_INFINITY)],
	['seed', (r) => (r.seed = Number.NaN)],
	['eval.every', (r) => (r.eval.every = -1)],
	['eval.games', (r) => (r.eval.games = 0)],
	['eval.temperatures', (r) => (r.eval.temperatures = [0, -1])],
	['maxNoSignal', (r) => (r.maxNoSignal = 0)],
	['maxNoSignal', (r) => (r.maxNoSignal = 17)],
	['maxContext', (r) => (r.maxContext = 8)],
	['reward.source', (r) => (r.reward = { source: 'judge' as 'env' })],
	['reward.judge.baseURL', (r) => (r.reward = { source: 'ruler' })],
	[
		'reward.judge.baseURL',
		(r) => (r.reward = { source: 'ruler', judge: { baseURL: 'localhost:8000', model: 'm' } })
	],
	[
		'reward.judge.model',
		(r) => (r.reward = { source: 'ruler', judge: { baseURL: 'http://127.0.0.1:1/v1', model: ' ' } })
	],
	[
		'reward.rubric',
		(r) =>
			(r.reward = {
				source: 'ruler+env',
				judge: { baseURL: 'https://x.test/v1', model: 'm' },
				rubric: ''
			})
	]
];

function refusal(recipe: Recipe): RunError {
	try {
		validateRecipe(recipe);
	} catch (error) {
		return error as RunError;
	}
	throw new Error('validateRecipe accepted a bad recipe');
}

describe('validateRecipe', () => {
	it('accepts a full recipe and returns it', () => {
		const r = full();
		expect(validateRecipe(r)).toBe(r);
	});

	it.each(BAD.map(([field, change], i) => [field, i, change] as const))(
		"refuses a bad %s (case %i) as 'invalid-recipe' naming the field",
		(field, _i, change) => {
			const r = structuredClone(full());
			change(r);
			const error = refusal(r);
			expect(error).toBeInstanceOf(RunError);
			expect(error.kind).toBe('invalid-recipe');
			expect(error.message.startsWith(`${field} must be`)).toBe(true);
		}
	);

	it('accepts edge values: 0 steps, klBeta 0, greedy evaluation, no evaluation', () => {
		const r = full();
		r.grpo.steps = 0;
		r.grpo.klBeta = 0;
		r.eval = { every: 0, games: 1, temperatures: [0] };
		r.warmStart = null;
		r.sft = null;
		expect(() => validateRecipe(r)).not.toThrow();
	});
});

describe('presets', () => {
	it.each(PRESET_NAMES)('%s validates, with locations under the root', (name) => {
		const r = preset(name, '/static');
		expect(validateRecipe(r)).toBe(r);
		expect(r.environment).toBe(name);
		const model =
			{ tictactoe: 'tabrl-tiny', letters: 'tabrl-tiny' }[name as string] ?? `tabrl-tiny-${name}`;
		expect(r.baseModel).toBe(`/static/models/${model}/`);
		if (r.warmStart) expect(r.warmStart.adapter).toBe(`/static/warm-starts/${model}/${name}/`);
		expect(preset(name, '/static/').baseModel).toBe(r.baseModel);
		expect(() => validateRecipe(forSoftwareGpu(r))).not.toThrow();
	});

	it('the warm-start recipe validates: SFT only, no GRPO steps', () => {
		const r = warmStartRecipe('tictactoe', 'static');
		expect(validateRecipe(r)).toBe(r);
		expect(r.warmStart).toBeNull();
		expect(r.grpo.steps).toBe(0);
		expect(sftSteps(r)).toBe(512); // 32768 games of perfect play, batches of 64
		// 2048's demonstrations are single moves, inbox's whole episodes
		expect(sftSteps(warmStartRecipe('2048', 'static'))).toBe(1024);
		expect(sftSteps(warmStartRecipe('inbox', 'static'))).toBe(2048);
	});

	it("2048's SFT may explore a share of moves in [0, 1)", () => {
		const r = warmStartRecipe('2048', 'static');
		expect(validateRecipe({ ...r, sft: { ...r.sft!, explore: 0.25 } }).sft!.explore).toBe(0.25);
		for (const explore of [1, -0.1, Number.NaN])
			expect(() => validateRecipe({ ...r, sft: { ...r.sft!, explore } })).toThrow(/sft\.explore/);
	});

	it("tic-tac-toe's SFT may take a share of perfect moves; other environments have none", () => {
		const ttt = warmStartRecipe('tictactoe', 'static');
		expect(validateRecipe({ ...ttt, sft: { ...ttt.sft!, skill: 0.5 } }).sft!.skill).toBe(0.5);
		const inbox = warmStartRecipe('inbox', 'static');
		expect(() => validateRecipe({ ...inbox, sft: { ...inbox.sft!, skill: 0.5 } })).toThrow(
			/sft\.skill.*only tictactoe/
		);
	});

	it("inbox's SFT may have the expert read every change; other environments have none", () => {
		const r = warmStartRecipe('inbox', 'static');
		const reads = validateRecipe({ ...r, sft: { ...r.sft!, readEveryChange: true } });
		expect(reads.sft!.readEveryChange).toBe(true);
		const ttt = warmStartRecipe('tictactoe', 'static');
		expect(() => validateRecipe({ ...ttt, sft: { ...ttt.sft!, readEveryChange: true } })).toThrow(
			/sft\.readEveryChange/
		);
		expect(() =>
			validateRecipe({ ...r, sft: { ...r.sft!, readEveryChange: 'yes' as unknown as boolean } })
		).toThrow(/sft\.readEveryChange/);
	});

	it('refuses environment options out of range', () => {
		const r = preset('2048', '/');
		for (const envOptions of [
			{ winningValue: 100 },
			{ winningValue: 4 },
			{ historyTurns: -1 },
			{ maxTurns: 0 },
			{ changes: 1.5 },
			{ changes: -0.1 }
		])
			expect(() => validateRecipe({ ...r, envOptions })).toThrow(/envOptions/);
		expect(
			validateRecipe({ ...r, envOptions: { winningValue: 64, historyTurns: null } }).envOptions
		).toEqual({
			winningValue: 64,
			historyTurns: null
		});
		// the opponent: tic-tac-toe's, and only a random or a perfect one
		const ttt = preset('tictactoe', '/');
		expect(() => validateRecipe({ ...r, envOptions: { opponent: 'perfect' } })).toThrow(
			/envOptions\.opponent.*only tictactoe/
		);
		expect(() =>
			validateRecipe({ ...ttt, envOptions: { opponent: 'smart' as 'perfect' } })
		).toThrow(/envOptions\.opponent/);
		expect(validateRecipe({ ...ttt, envOptions: { opponent: 'perfect' } }).envOptions).toEqual({
			opponent: 'perfect'
		});
		// an invalid reply's rule: 'random-move' only where there are moves to replace it with
		for (const game of [r, ttt])
			expect(
				validateRecipe({ ...game, envOptions: { onInvalidReply: 'random-move' } }).envOptions
			).toEqual({ onInvalidReply: 'random-move' });
		const inbox = preset('inbox', '/');
		expect(() =>
			validateRecipe({ ...inbox, envOptions: { onInvalidReply: 'random-move' } })
		).toThrow(/envOptions\.onInvalidReply.*only games have moves/);
		expect(validateRecipe({ ...inbox, envOptions: { onInvalidReply: 'end' } }).envOptions).toEqual({
			onInvalidReply: 'end'
		});
		expect(() =>
			validateRecipe({ ...ttt, envOptions: { onInvalidReply: 'skip' as 'end' } })
		).toThrow(/envOptions\.onInvalidReply must be one of end, random-move/);
	});
});

describe('sftSteps', () => {
	it('is epochs x ceil(games / batchSize), 0 without SFT', () => {
		expect(sftSteps({ sft: null })).toBe(0);
		expect(sftSteps({ sft: DEFAULT_SFT })).toBe(16384 / 64);
		expect(sftSteps({ sft: { ...DEFAULT_SFT, games: 5, batchSize: 2, epochs: 3 } })).toBe(9);
		expect(sftSteps({ sft: { ...DEFAULT_SFT, games: 4, batchSize: 2, epochs: 1 } })).toBe(2);
	});
});

describe('forSoftwareGpu', () => {
	it('shrinks tic-tac-toe: 1 x 4 games, 10 steps at most, r 8, 4 evaluation games after the games', () => {
		const r = preset('tictactoe', '/');
		const before = structuredClone(r);
		const s = forSoftwareGpu(r);
		expect(r).toEqual(before); // the input is left alone
		expect(s.grpo.groups).toBe(1);
		expect(s.grpo.groupSize).toBe(4);
		expect(s.grpo.steps).toBe(10);
		expect(s.lora).toEqual({ rank: 8, alpha: 16 });
		// evaluations at steps 0, 5, 10 of 4 greedy games each, all of them (never sized), each
		// after the next step's games so a visitor sees games first
		expect(s.eval).toEqual({ ...r.eval, every: 5, games: 4, sized: false, afterGames: true });
		expect(() => validateRecipe(s)).not.toThrow();
		expect(() =>
			validateRecipe({ ...s, eval: { ...s.eval, afterGames: 'yes' as unknown as boolean } })
		).toThrow(/eval.afterGames/);
		// what it does not shrink
		expect(s.grpo.learningRate).toBe(r.grpo.learningRate);
		expect(s.warmStart).toEqual(r.warmStart);
		expect(s.seed).toBe(r.seed);
	});

	it('shrinks letters to at most 2 x 8 games and 10 steps, keeping its LoRA and a small evaluation', () => {
		const r = preset('letters', '/');
		const s = forSoftwareGpu(r);
		expect(s.grpo.groups).toBe(2);
		expect(s.grpo.groupSize).toBe(Math.min(r.grpo.groupSize, 8));
		expect(s.grpo.steps).toBe(10);
		expect(s.lora).toEqual(r.lora);
		const wide = forSoftwareGpu({ ...r, grpo: { ...r.grpo, groups: 8, groupSize: 16 } });
		expect([wide.grpo.groups, wide.grpo.groupSize]).toEqual([2, 8]);
		// letters keeps an evaluation it affords there: 8 games every 5 steps
		expect([s.eval.every, s.eval.games, s.eval.afterGames]).toEqual([5, 8, true]);
		// never grows a recipe that is already small
		const tiny = { ...r, grpo: { ...r.grpo, groups: 1, groupSize: 2, steps: 3 } };
		const t = forSoftwareGpu(tiny);
		expect([t.grpo.groups, t.grpo.groupSize, t.grpo.steps]).toEqual([1, 2, 3]);
	});
});

describe('live settings', () => {
	it('checks each setting it is given, naming the one out of range', () => {
		expect(checkLiveSettings({ learningRate: 1e-3, klBeta: 0, temperature: 0.7 })).toEqual({
			learningRate: 1e-3,
			klBeta: 0,
			temperature: 0.7
		});
		expect(checkLiveSettings({})).toEqual({});
		expect(() => checkLiveSettings({ learningRate: 0 })).toThrow(/learningRate must be/);
		expect(() => checkLiveSettings({ klBeta: 11 })).toThrow(/klBeta must be a number from 0 to 10/);
		expect(() => checkLiveSettings({ temperature: Number.NaN })).toThrow(/temperature must be/);
	});

	it("a resume takes the last trained step's recorded settings, skipping damaged values", () => {
		const line = (step: number, m: Record<string, number>) => ({ step, ...m });
		expect(recordedSettings([])).toEqual({});
		// steps made before the settings were recorded: nothing
		expect(recordedSettings([line(1, { 'train/lr': 1e-3, 'train/reward': 0.5 })])).toEqual({});
		const history = [
			line(1, { 'train/lr': 2e-4, 'train/kl_beta': 0, 'train/temperature': 1 }),
			line(2, { 'train/lr': 5e-4, 'train/kl_beta': 0.05, 'train/temperature': 0.8 }),
			line(2, { 'val/reward': 0.4 }) // an evaluation line after it
		];
		expect(recordedSettings(history)).toEqual({
			learningRate: 5e-4,
			klBeta: 0.05,
			temperature: 0.8
		});
		expect(
			recordedSettings([line(3, { 'train/lr': -1, 'train/kl_beta': 0.1, 'train/temperature': 9 })])
		).toEqual({ klBeta: 0.1 });

		// a step that warmed up trained at a share of the rate set: the rate set goes on
		const warming = { 'train/kl_beta': 0.05, 'train/temperature': 1 };
		expect(
			recordedSettings([line(1, { 'train/lr': 1e-4, [LR_WARMUP]: 0.25, ...warming })])
		).toMatchObject({ learningRate: 4e-4 });
		expect(recordedSettings([line(1, { 'train/lr': 1e-4, [LR_WARMUP]: 0, ...warming })])).toEqual({
			klBeta: 0.05,
			temperature: 1
		});
	});

	it('the learning rate warms up linearly over warmupSteps GRPO steps, then stays', () => {
		expect([0, 1, 2, 3, 9].map((k) => warmupFactor({ warmupSteps: 3 }, k))).toEqual([
			1 / 3,
			2 / 3,
			1,
			1,
			1
		]);
		expect(warmupFactor({}, 0)).toBe(1);
		expect(warmupFactor({ warmupSteps: 0 }, 0)).toBe(1);
		expect(warmupFactor({ warmupSteps: 1 }, 0)).toBe(1);
	});
});
