/**
 * Share links: a bare page holds nothing; 2000 random settings survive writing and reading
 * exactly, each link carrying only fields that differ from its preset; no key is written or
 * read; a future, unreadable or missing version opens the defaults and says why; 6000 fuzzed
 * links never throw and always give a valid recipe.
 */
import { describe, expect, it } from 'vitest';
import {
	PRESET_NAMES,
	REWARD_SOURCES,
	preset,
	sizedGrpo,
	validateRecipe,
	type Recipe
} from '../../../src/lib/run';
import {
	changesSizes,
	presetSettings,
	readShareQuery,
	recipeSettings,
	shareQuery,
	SHARE_VERSION,
	type ShareSettings
} from '../../../src/lib/ui/share-link';
import { Rng } from '../../../src/lib/util/random';

/** The recipe settings describe (as the Train form builds it). */
function recipeOf(s: ShareSettings): Recipe {
	const base = preset(s.preset);
	return {
		...base,
		baseModel: s.model,
		seed: s.seed,
		grpo: {
			...sizedGrpo(base.grpo, s.groups),
			steps: s.steps,
			groupSize: s.groupSize,
			learningRate: s.learningRate,
			klBeta: s.klBeta,
			temperature: s.temperature
		}
	};
}

const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[rng.int(xs.length)];

function randomSettings(rng: Rng): ShareSettings {
	const s = presetSettings(pick(rng, PRESET_NAMES));
	const maybe = () => rng.next() < 0.5;
	if (maybe()) s.model = pick(rng, ['/models/other/', 'https://huggingface.co/x/y/resolve/main/']);
	if (maybe()) s.steps = 1 + rng.int(5000);
	if (maybe()) s.groups = 1 + rng.int(64);
	if (maybe()) s.groupSize = 2 + rng.int(64);
	if (maybe()) s.learningRate = pick(rng, [1e-5, 3e-4, 0.001, 2.5e-3, 0.1, 1]);
	if (maybe()) s.klBeta = pick(rng, [0, 0.01, 0.05, 0.2, 1, 1e-3]);
	if (maybe()) s.temperature = pick(rng, [0.3, 0.7, 1, 1.2, 2]);
	if (maybe()) s.seed = rng.int(2 ** 31);
	if (maybe()) {
		s.reward = pick(rng, REWARD_SOURCES);
		s.judgeUrl = pick(rng, ['https://openrouter.ai/api/v1', 'http://127.0.0.1:8000/v1']);
		s.judgeModel = pick(rng, ['openai/o4-mini', 'qwen3:8b', 'model with spaces & ü']);
		if (maybe()) s.rubric = 'Prefer short games.\nPenalise illegal moves & waffle: "no".';
	}
	return s;
}

describe('share links', () => {
	it('a bare page holds nothing; a preset of defaults is the preset alone', () => {
		expect(readShareQuery('')).toEqual({
			settings: presetSettings('tictactoe'),
			ignored: [],
			shared: false
		});
		expect(readShareQuery('selftest=on').shared).toBe(false);
		expect(shareQuery(presetSettings('tictactoe'))).toBe('');
		expect(shareQuery(presetSettings('2048'))).toBe(`v=${SHARE_VERSION}&preset=2048`);
		const changed = { ...presetSettings('inbox'), learningRate: 0.001, seed: 9 };
		expect(shareQuery(changed)).toBe(`v=1&preset=inbox&lr=0.001&seed=9`);
		const kl = { ...presetSettings('letters'), klBeta: 0.05, temperature: 0.7 };
		expect(shareQuery(kl)).toBe(`v=1&preset=letters&kl=0.05&temp=0.7`);
		expect(readShareQuery(shareQuery(kl)).settings).toEqual(kl);
		// a link that only picks a preset, or a model, leaves its sizes to this GPU
		expect(changesSizes(presetSettings('2048'))).toBe(false);
		expect(changesSizes(changed)).toBe(true);
		const smol = 'https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct/resolve/main/';
		expect(changesSizes(presetSettings('tictactoe', '/', '/my/model/'))).toBe(false);
		expect(changesSizes(readShareQuery('model=/my/model/').settings)).toBe(false);
		expect(changesSizes(presetSettings('tictactoe', '/', smol))).toBe(false);
		expect(changesSizes({ ...presetSettings('tictactoe', '/', smol), steps: 3 })).toBe(true);
	});

	it('random settings survive a round trip exactly, each link holding only what differs', () => {
		const rng = new Rng(1);
		for (let i = 0; i < 2000; i++) {
			const s = randomSettings(rng);
			const query = shareQuery(s);
			const read = readShareQuery(query);
			expect(read.ignored, query).toEqual([]);
			expect(read.settings, query).toEqual(s);
			// the preset on the link's model (a Hub model's own rate), the bundled model as its model
			const defaults = {
				...presetSettings(s.preset, '/', s.model),
				model: presetSettings(s.preset).model
			};
			const params = new URLSearchParams(query);
			const differing = (Object.keys(s) as (keyof ShareSettings)[]).filter(
				(k) => k !== 'preset' && s[k] !== defaults[k]
			);
			// v, the preset unless it is the first, and one parameter per differing field
			expect([...params.keys()].length).toBe(
				(query ? 1 : 0) + (s.preset === 'tictactoe' ? 0 : 1) + differing.length
			);
		}
	});

	it("a run's recipe gives back the settings it was made from", () => {
		const rng = new Rng(3);
		for (let i = 0; i < 200; i++) {
			const s = randomSettings(rng);
			const recipe = recipeOf(s);
			const judged =
				s.reward === 'env'
					? recipe
					: {
							...recipe,
							reward: {
								source: s.reward,
								judge: { baseURL: s.judgeUrl, model: s.judgeModel },
								...(s.rubric ? { rubric: s.rubric } : {})
							}
						};
			const back = recipeSettings(judged);
			expect(back).toEqual(
				s.reward === 'env' ? { ...s, judgeUrl: '', judgeModel: '', rubric: '' } : s
			);
		}
	});

	it('never writes nor reads a key', () => {
		const s = {
			...presetSettings('tictactoe'),
			reward: 'ruler' as const,
			judgeUrl: 'https://user:sk-secret@judge.example/v1',
			judgeModel: 'm'
		};
		const query = shareQuery(s);
		expect(query).not.toContain('secret');
		expect(readShareQuery(query).settings.judgeUrl).toBe('');
		const read = readShareQuery('v=1&api_key=sk-1&reward=ruler');
		expect(JSON.stringify(read.settings)).not.toContain('sk-1');
		expect(read.settings.reward).toBe('ruler');
		expect(read.ignored).toEqual([
			'"api_key": links never carry API keys; enter the key in the form.'
		]);
		expect(
			readShareQuery(`v=1&judge=${encodeURIComponent('https://a:b@x.example/v1')}`).ignored
		).toEqual([
			'judge "https://a:b@x.example/v1" is not an http(s) URL without a user or password in it.'
		]);
	});

	it('a future, unreadable or missing version opens the defaults and says why', () => {
		const future = readShareQuery('v=2&preset=2048&lr=0.5');
		expect(future.settings).toEqual(presetSettings('tictactoe'));
		expect(future.ignored).toEqual([
			'This link was made by a newer TabRL (version 2; this page reads version 1): it opened with the defaults.'
		]);
		expect(readShareQuery('v=banana&steps=3').ignored[0]).toMatch(/version "banana" is not one/);
		const old = readShareQuery('model=https%3A%2F%2Fhf.co%2Fm%2F&steps=3');
		expect(old.settings).toEqual(presetSettings('tictactoe', '/', 'https://hf.co/m/'));
		expect(old.settings.learningRate).toBe(5e-5); // the preset on a pretrained model
		expect(old.ignored).toEqual(['The link has no version (v=1), so its steps was not used.']);
	});

	it("a run's result rides along for display: written as STEP:REWARD[:EVALUATION], read back exactly, refused when malformed", () => {
		const s = { ...presetSettings('2048'), steps: 40, seed: 3 };
		const query = shareQuery(s, '/', { step: 40, reward: 0.571234567, evaluation: 0.49 });
		expect(new URLSearchParams(query).get('result')).toBe('40:0.5712:0.49');
		const read = readShareQuery(query);
		expect(read.ignored).toEqual([]);
		expect(read.settings).toEqual(s);
		expect(read.result).toEqual({ step: 40, reward: 0.5712, evaluation: 0.49 });
		// no evaluation; a negative reward; the result alone on a bare preset
		expect(readShareQuery(shareQuery(s, '/', { step: 2, reward: -1 })).result).toEqual({
			step: 2,
			reward: -1
		});
		expect(shareQuery(presetSettings('tictactoe'), '/', { step: 1, reward: 0.5 })).toBe(
			'v=1&result=1%3A0.5'
		);
		// not written when it cannot be read back (a non-finite reward)
		expect(shareQuery(s, '/', { step: 1, reward: NaN })).toBe(shareQuery(s));
		for (const bad of ['', '40', '40:', 'x:1', '1:2:3:4', '1:1e9', '1:NaN', '-1:0.5', '1:0.5:']) {
			const r = readShareQuery(`v=1&result=${encodeURIComponent(bad)}`);
			expect(r.result, bad).toBeUndefined();
			expect(r.ignored, bad).toEqual([
				`result ${JSON.stringify(bad)} is not STEP:REWARD or STEP:REWARD:EVALUATION (e.g. 100:0.74:0.81).`
			]);
		}
		// a link of another version carries no result
		expect(readShareQuery('v=2&result=1:0.5').result).toBeUndefined();
	});

	it('bad values are dropped one by one, each named, the rest kept', () => {
		const read = readShareQuery(
			'v=1&preset=2048&steps=-4&groups=3&size=1&lr=1e9&kl=-1&temp=0&seed=x&reward=judge&model=javascript%3Aalert(1)&x=1'
		);
		expect(read.settings).toEqual({ ...presetSettings('2048'), groups: 3 });
		expect(read.ignored).toEqual([
			'"x" is not a setting TabRL knows.',
			'model "javascript:alert(1)" is not an http(s) URL or a path on this site.',
			'steps "-4" is not an integer from 1 to 100000.',
			'size "1" is not an integer from 2 to 1024.',
			'lr "1e9" is not a number above 0 and at most 1.',
			'kl "-1" is not a number from 0 to 10.',
			'temp "0" is not a number above 0 and at most 4.',
			'seed "x" is not an integer from 0 to 2147483647.',
			'reward "judge" is not one of env, ruler, ruler+env.'
		]);
		expect(readShareQuery('v=1&preset=chess').ignored).toEqual([
			'preset "chess" is not one of tictactoe, 2048, inbox, letters: tictactoe was used.'
		]);
	});

	it('fuzz: random and mangled links never throw and always give a valid recipe', () => {
		const rng = new Rng(7);
		const names = [
			'v',
			'preset',
			'model',
			'steps',
			'groups',
			'size',
			'lr',
			'kl',
			'temp',
			'seed',
			'reward',
			'result'
		];
		const junk = [
			'',
			'0',
			'-1',
			'1e400',
			'NaN',
			'%',
			'\u0000',
			'2048',
			'ruler',
			'/x',
			'9'.repeat(40),
			'12:0.5',
			'3:-0.25:0.9'
		];
		const check = (query: string) => {
			let read: ReturnType<typeof readShareQuery> | undefined;
			expect(() => (read = readShareQuery(query)), query).not.toThrow();
			expect(() => validateRecipe(recipeOf(read!.settings)), query).not.toThrow();
			const s = read!.settings;
			const r = read!.result;
			if (r) expect([r.step, r.reward, r.evaluation ?? 0].every(Number.isFinite), query).toBe(true);
			expect(PRESET_NAMES).toContain(s.preset);
			expect(REWARD_SOURCES).toContain(s.reward);
			for (const text of [s.model, s.judgeUrl, s.judgeModel, s.rubric])
				expect(typeof text).toBe('string');
		};
		for (let i = 0; i < 3000; i++) {
			const params = Array.from({ length: rng.int(8) }, () => {
				const name = rng.next() < 0.9 ? pick(rng, names) : String.fromCharCode(33 + rng.int(90));
				const value =
					rng.next() < 0.5
						? pick(rng, junk)
						: Array.from({ length: rng.int(12) }, () => String.fromCharCode(rng.int(0x3000))).join(
								''
							);
				return `${encodeURIComponent(name)}=${encodeURIComponent(value)}`;
			});
			check(params.join('&'));
		}
		for (let i = 0; i < 3000; i++) {
			const query = shareQuery(randomSettings(rng)) || 'v=1';
			const at = rng.int(query.length);
			const mangled =
				query.slice(0, at) + String.fromCharCode(32 + rng.int(95)) + query.slice(at + 1);
			check(mangled);
		}
	});
});
