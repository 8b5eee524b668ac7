/**
 * The environments' one list (src/lib/agent/envs/registry.ts) and the interface every
 * environment implements (environment.ts), checked the same way for each: a new
 * environment's folder is tested here as soon as it is registered. Each scripted player
 * plays games through the real rollout; the replay, outcome, evaluation numbers and (when it
 * has them) demonstrations come from those games; its recipe defaults make a valid preset.
 */
import { describe, expect, it } from 'vitest';
import { trajectoryFromJson, trajectoryToJson } from '../../../../src/lib/agent/jsonl';
import { policyClient } from '../../../../src/lib/agent/policy-client';
import {
	ENVIRONMENT_NAMES,
	ENVIRONMENTS,
	isEnvironmentName,
	type RolloutRequest
} from '../../../../src/lib/agent/envs';
import { forSoftwareGpu, preset, validateRecipe } from '../../../../src/lib/run';

describe('registry', () => {
	it('lists each environment once, under its own name, in the menu order', () => {
		expect(ENVIRONMENT_NAMES).toEqual(['tictactoe', '2048', 'inbox', 'letters']);
		expect(new Set(ENVIRONMENT_NAMES).size).toBe(ENVIRONMENT_NAMES.length);
		expect(Object.keys(ENVIRONMENTS).sort()).toEqual([...ENVIRONMENT_NAMES].sort());
		for (const name of ENVIRONMENT_NAMES) expect(ENVIRONMENTS[name].name).toBe(name);
		expect(isEnvironmentName('letters')).toBe(true);
		expect(isEnvironmentName('chess')).toBe(false);
		expect(isEnvironmentName(undefined)).toBe(false);
	});
});

describe.each(ENVIRONMENT_NAMES)('%s behind the interface', (name) => {
	const env = ENVIRONMENTS[name];
	const options = forSoftwareGpu(preset(name)).envOptions ?? {};
	const request = (scenario: number, index: number): RolloutRequest => ({
		model: 'scripted',
		scenario,
		index,
		temperature: 1,
		maxTokens: 128,
		samplingSeed: null,
		options
	});

	it('its scripted players play whole games; replay, outcome and numbers read them', async () => {
		for (const kind of ['random', 'expert'] as const) {
			const games = [];
			for (let index = 0; index < 3; index++) {
				const r = request(123, index);
				const t = await env.rollout(policyClient(env.scripted(kind, r)), r);
				expect(Number.isFinite(t.reward)).toBe(true);
				const outcome = env.outcome(t);
				expect(outcome.moves).toBeGreaterThanOrEqual(0);
				// the studio draws a game from its trajectory alone, also after a JSON round trip
				const items = env.replay(trajectoryFromJson(trajectoryToJson(t)));
				expect(items.at(-1)).toMatchObject({ kind: 'outcome', reward: t.reward });
				games.push(t);
			}
			for (const v of Object.values(env.evalMetrics(games))) expect(Number.isFinite(v)).toBe(true);
		}
	});

	it('a seed repeats a game', async () => {
		const play = async () => {
			const r = request(7, 1);
			return trajectoryToJson(await env.rollout(policyClient(env.scripted('random', r)), r));
		};
		expect(await play()).toEqual(await play());
	});

	it('its demonstrations, when it has them, are conversations the same seed repeats', async () => {
		if (!env.demonstrations) return;
		const demos = await env.demonstrations(3, 50, options);
		expect(demos.length).toBeGreaterThanOrEqual(3);
		const again = await env.demonstrations(3, 50, options);
		expect(again.map((t) => trajectoryToJson(t))).toEqual(demos.map((t) => trajectoryToJson(t)));
	});

	it('its recipe defaults make a valid preset, shrunk or not', () => {
		const r = preset(name);
		expect(validateRecipe(r).environment).toBe(name);
		expect(() => validateRecipe(forSoftwareGpu(r))).not.toThrow();
		expect(env.recipe.title.trim()).not.toBe('');
		if (env.recipe.warmStartSft) expect(env.demonstrations).toBeDefined();
	});
});
