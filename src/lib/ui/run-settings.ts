/**
 * @file The Train form's typed-in settings (run name, steps, groups × games, learning rate,
 * KL β, temperature, seed): each input's kind, label, tooltip, test id and the RecipeForm
 * field it edits, so that TrainForm renders them all with one snippet.
 */
import type { RecipeForm } from './recipe-form.svelte';

/** One setting's input, and the field it edits (for `bind:value={get, set}`). */
export interface Setting {
	label: string;
	title: string;
	testid: string;
	type: 'text' | 'number';
	inputmode?: 'numeric';
	min?: number;
	get: () => number | string;
	set: (value: number | string) => void;
}

type About = Pick<Setting, 'label' | 'title' | 'testid'>;

/** A number input: the browser hands bind:value a number (null while it is empty). */
function numberSetting(
	f: RecipeForm,
	key: 'steps' | 'groupSize' | 'seed',
	min: number,
	about: About
): Setting {
	return { ...about, type: 'number', min, get: () => f[key], set: (v) => (f[key] = v as number) };
}

function textSetting(
	f: RecipeForm,
	key: 'run' | 'learningRate' | 'klBeta' | 'temperature',
	about: About
): Setting {
	return { ...about, type: 'text', get: () => f[key], set: (v) => (f[key] = String(v)) };
}

/** The settings of a form, by name. */
export function runSettings(f: RecipeForm) {
	return {
		run: textSetting(f, 'run', {
			label: 'Run name',
			title: 'The run is saved in this browser under this name; a saved name resumes that run',
			testid: 'train-run'
		}),
		steps: numberSetting(f, 'steps', 1, {
			label: 'GRPO steps',
			title: 'Updates to make: each step plays the groups of games, then trains on them',
			testid: 'train-steps'
		}),
		/** 'auto' or a number: typed as text, with a number keyboard. */
		groups: {
			label: 'Groups per step',
			title:
				'Groups per step, or auto: as many as this device plays in a few seconds a step (2–4 s; 12–20 s for 2048, whose games are long). The games of a group start alike, so they can be compared',
			testid: 'train-groups',
			type: 'text',
			inputmode: 'numeric',
			get: () => f.groups,
			set: (v) => (f.groups = v)
		} satisfies Setting,
		groupSize: numberSetting(f, 'groupSize', 2, {
			label: 'Games per group',
			title: 'Games per group: GRPO scores each game against the others of its group',
			testid: 'train-group-size'
		}),
		learningRate: textSetting(f, 'learningRate', {
			label: 'Learning rate',
			title: "AdamW's step size for the LoRA adapter's weights",
			testid: 'train-lr'
		}),
		klBeta: textSetting(f, 'klBeta', {
			label: 'KL β',
			title:
				'Weight of the penalty for moving away from the reference policy (the warm start, or the base model): 0 lets the policy drift freely',
			testid: 'train-kl'
		}),
		temperature: textSetting(f, 'temperature', {
			label: 'Temperature',
			title:
				'Sampling temperature of the games: higher plays more varied games (more to compare in a group), lower plays the policy’s favourite moves',
			testid: 'train-temperature'
		}),
		seed: numberSetting(f, 'seed', 0, {
			label: 'Seed',
			title: 'The same seed plays the same games: a run (and its share link) repeats',
			testid: 'train-seed'
		})
	};
}
