/**
 * @file "Watch the expert play": one game of a preset's environment played by its scripted
 * expert (the player its warm start imitates), through the same rollout code a model goes
 * through, in the page: no model, no GPU, milliseconds. It shows what the task looks like.
 */
import { ENVIRONMENTS, preset, type EnvironmentName, type PresetName } from '../run';
import type { ReplayItem } from '../agent/envs/replay';
import { policyClient } from '../agent/policy-client';

export interface ExampleGame {
	env: EnvironmentName;
	items: ReplayItem[];
	reward: number;
}

export class ExpertExample {
	/** The game shown, or null. */
	game = $state<ExampleGame | null>(null);
	/** Example games play scenarios from here on (below the evaluation seeds). */
	#seed = Math.floor(Math.random() * 1e6);

	/** Plays and shows a game of `name`'s environment: a new scenario each time. */
	async play(name: PresetName): Promise<void> {
		const env = ENVIRONMENTS[name];
		const request = {
			model: 'expert',
			scenario: this.#seed++,
			index: 0,
			temperature: 0,
			maxTokens: 128,
			samplingSeed: null,
			// the game as the preset plays it on a GPU (free here: no model plays it)
			options: preset(name).envOptions ?? {}
		};
		const game = await env.rollout(policyClient(env.scripted('expert', request)), request);
		this.game = { env: env.name, items: env.replay(game), reward: game.reward };
	}

	/** The form now shows preset `name`: a game of another environment goes. */
	keepOnly(name: PresetName): void {
		if (this.game?.env !== name) this.game = null;
	}
}
