/**
 * @file The Train form's values as Svelte 5 runes: a preset on a base model plus the
 * visitor's changes, and the recipe they describe. A preset is scaled to this GPU (smaller on
 * a software GPU); a share link or saved run fills it with its own numbers as given
 * (`linked`). The base model is the preset's bundled one or any other (a Hub model: the
 * preset on it, run/presets.ts presetOn); a chosen model outlives a change of preset. The
 * reward is `reward`, the expert's example game `example`; `limits` are the device's, for
 * the memory a chosen model will need.
 */
import {
	DEFAULT_PRESET,
	forSoftwareGpu,
	isBundledModel,
	preset,
	presetOn,
	sizedGrpo,
	type PresetName,
	type Recipe
} from '../run';
import type { DeviceLimits } from '../model/transformer/memory';
import { ExpertExample } from './expert-example.svelte';
import { DEFAULT_LIMITS } from './model-fit';
import { rewardOf } from './reward-form';
import { RewardSettings } from './reward-settings.svelte';
import { changesSizes, type ShareSettings } from './share-link';

/** `${preset}-N` for the smallest N >= 1 no saved run is named. */
export function freeRunName(presetName: string, taken: readonly string[]): string {
	let n = 1;
	while (taken.includes(`${presetName}-${n}`)) n++;
	return `${presetName}-${n}`;
}

/** The fields a recipe fills (and a model choice may change). */
type Defaults = Pick<
	RecipeForm,
	'steps' | 'groups' | 'groupSize' | 'learningRate' | 'klBeta' | 'temperature' | 'seed'
>;

export class RecipeForm {
	preset = $state<PresetName>(DEFAULT_PRESET);
	/** The base model's URL prefix; a path is taken relative to this site. */
	url = $state(preset(DEFAULT_PRESET).baseModel);
	run = $state('');
	steps = $state(0);
	/** Groups per step: 'auto' (sized to the device: run/sizing.ts) or a number. */
	groups = $state<number | string>(0);
	groupSize = $state(0);
	learningRate = $state('');
	/** The KL penalty's weight and the sampling temperature, as typed. */
	klBeta = $state('');
	temperature = $state('');
	seed = $state(1);
	/** Step-through: the next run pauses between the phases of each GRPO step. */
	stepThrough = $state(false);
	/** Set when the GPU is a software one: presets run scaled down (forSoftwareGpu). */
	softwareGpu = $state(false);
	/**
	 * The form holds a share link's or a saved run's own sizes and rates (not just a preset):
	 * the GPU probe must not rescale them for a software GPU (a link means the same numbers
	 * everywhere).
	 */
	linked = $state(false);
	/** The device's buffer limits (the GPU summary's; WebGPU's defaults until it arrives). */
	limits = $state<DeviceLimits>(DEFAULT_LIMITS);
	readonly reward = new RewardSettings(() => this.recipe());
	readonly example = new ExpertExample();

	/** The run name the form chose itself (a typed or linked one is kept as it is). */
	#chosenName = '';

	/** `taken`: the saved runs' names, so a preset's run never silently continues one. */
	constructor(private readonly taken: () => readonly string[] = () => []) {
		this.choosePreset(DEFAULT_PRESET);
	}

	/**
	 * The saved runs were listed (the page's first listing): a name the form chose that a
	 * saved run holds moves on to a free one, so Train starts a new run; Resume continues one.
	 */
	avoidSavedNames(): void {
		if (this.run === this.#chosenName)
			this.run = this.#chosenName = freeRunName(this.preset, this.taken());
	}

	/**
	 * Fills the form with a preset's values on the chosen model (a run name no saved run has).
	 * A model the visitor chose (a Hub model, a URL) stays; the bundled one follows the preset's
	 * own (each game family has its own bundled model).
	 */
	choosePreset(name: PresetName): void {
		const chosen = isBundledModel(this.preset, this.url) ? null : this.url;
		this.linked = false;
		this.preset = name;
		// (also called when the GPU probe answers: an example of this preset stays)
		this.example.keepOnly(name);
		const r = this.#scaled(chosen === null ? preset(name) : presetOn(name, chosen));
		this.url = r.baseModel;
		this.run = this.#chosenName = freeRunName(name, this.taken());
		this.#setFields(defaultsOf(r));
	}

	/**
	 * Sets the base model. Each field still at the recipe's value for the model before takes
	 * the value for this one (a Hub model's gentler learning rate); a value typed stays. A run
	 * name the form chose moves on to a free one (a saved run is on the model it was made on).
	 */
	chooseModel(url: string): void {
		const before = this.#defaults();
		this.url = url;
		this.avoidSavedNames();
		const after = this.#defaults();
		const follow = <K extends keyof Defaults>(k: K): Defaults[K] =>
			String(this[k]) === String(before[k]) ? after[k] : this[k];
		this.#setFields({
			steps: follow('steps'),
			groups: follow('groups'),
			groupSize: follow('groupSize'),
			learningRate: follow('learningRate'),
			klBeta: follow('klBeta'),
			temperature: follow('temperature'),
			seed: follow('seed')
		});
	}

	#setFields(d: Defaults): void {
		this.steps = d.steps;
		this.groups = d.groups;
		this.groupSize = d.groupSize;
		this.learningRate = d.learningRate;
		this.klBeta = d.klBeta;
		this.temperature = d.temperature;
		this.seed = d.seed;
	}

	/**
	 * Tells the form what GPU the worker got: a software one scales presets down (not the
	 * numbers of a link or a saved run, nor while a run is going: `busy`).
	 */
	setSoftwareGpu(software: boolean, busy: boolean): void {
		if (software === this.softwareGpu) return;
		this.softwareGpu = software;
		if (!busy && !this.linked) this.choosePreset(this.preset);
	}

	/** The form's settings, as a share link holds them (share-link.ts; never the API key). */
	shareSettings(): ShareSettings {
		return {
			preset: this.preset,
			model: this.url.trim(),
			steps: Number(this.steps),
			groups: this.#autoGroups ? 'auto' : Number(this.groups),
			groupSize: Number(this.groupSize),
			learningRate: Number(this.learningRate),
			klBeta: Number(this.klBeta),
			temperature: Number(this.temperature),
			seed: Number(this.seed),
			reward: this.reward.source,
			judgeUrl: this.reward.baseURL.trim(),
			judgeModel: this.reward.model.trim(),
			rubric: this.reward.rubric.trim()
		};
	}

	/** The form set to `s` (a preset alone, unchanged, is scaled as this GPU runs it). */
	fill(s: ShareSettings): void {
		// (its model first: choosePreset keeps a chosen one)
		this.url = s.model;
		this.choosePreset(s.preset);
		this.linked = changesSizes(s);
		if (!this.linked) return;
		this.url = s.model;
		this.steps = s.steps;
		this.groups = s.groups;
		this.groupSize = s.groupSize;
		this.learningRate = String(s.learningRate);
		this.klBeta = String(s.klBeta);
		this.temperature = String(s.temperature);
		this.seed = s.seed;
		this.reward.source = s.reward;
		this.reward.baseURL = s.judgeUrl;
		this.reward.model = s.judgeModel;
		this.reward.rubric = s.rubric;
	}

	/** The recipe the form describes. */
	recipe(): Recipe {
		return this.recipeOf(this.shareSettings());
	}

	/** The recipe of settings `s` as this form runs them here (the preset scaled on a software GPU). */
	recipeOf(s: ShareSettings): Recipe {
		const base = this.#scaled(presetOn(s.preset, s.model));
		const reward = rewardOf({
			source: s.reward,
			baseURL: s.judgeUrl,
			model: s.judgeModel,
			rubric: s.rubric
		});
		return {
			...base,
			...(reward ? { reward } : {}),
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

	get #autoGroups(): boolean {
		return String(this.groups).trim().toLowerCase() === 'auto';
	}

	/** The fields' values for the preset on the form's model, as this GPU runs it. */
	#defaults(): Defaults {
		return defaultsOf(this.#scaled(presetOn(this.preset, this.url.trim())));
	}

	#scaled(recipe: Recipe): Recipe {
		return this.softwareGpu ? forSoftwareGpu(recipe) : recipe;
	}
}

/** The form's fields as a recipe sets them. */
function defaultsOf(r: Recipe): Defaults {
	return {
		steps: r.grpo.steps,
		groups: r.grpo.autoSize ? 'auto' : r.grpo.groups,
		groupSize: r.grpo.groupSize,
		learningRate: String(r.grpo.learningRate),
		klBeta: String(r.grpo.klBeta),
		temperature: String(r.grpo.temperature),
		seed: r.seed
	};
}
