/**
 * @file The Train form's reward choice as Svelte 5 runes: the game's reward (default) or
 * RULER's judge at the visitor's URL, its fields and errors, and its API key, held in
 * memory (or this tab's sessionStorage if asked), never in a recipe; the worker sends it
 * only to the judge.
 */
import type { Recipe, RewardSource } from '../run';
import { rewardErrors, type RewardField } from './reward-form';

/** Where "remember in this tab" keeps the judge's key: sessionStorage (this tab only). */
export const JUDGE_KEY_STORAGE = 'tabrl:judge-api-key';

function tabStorage(): Storage | null {
	try {
		return globalThis.sessionStorage ?? null;
	} catch {
		return null; // storage disabled
	}
}

export class RewardSettings {
	/** The reward trained on: the game's (default) or RULER's judge. */
	source = $state<RewardSource>('env');
	/** The judge's OpenAI-compatible base URL and model. */
	baseURL = $state('');
	model = $state('');
	/** Empty: ART's default rubric. */
	rubric = $state('');
	/** The judge's API key: in memory; in sessionStorage too while `rememberKey`. */
	key = $state('');
	rememberKey = $state(false);
	/** Fields whose errors show: left by the visitor, or all once Train was pressed. */
	touched = $state<Partial<Record<RewardField, boolean>>>({});
	/** Each reward field's error, as the run layer's validateRecipe words it. */
	readonly errors = $derived.by(() => rewardErrors(this.#recipe()));

	#recipe: () => Recipe;

	/** `recipe` returns the recipe the whole form describes (an error may be another field's). */
	constructor(recipe: () => Recipe) {
		this.#recipe = recipe;
		const kept = tabStorage()?.getItem(JUDGE_KEY_STORAGE);
		if (kept) {
			this.key = kept;
			this.rememberKey = true;
		}
	}

	/** The key to send beside `recipe`: only to a run RULER judges, else none (''). */
	keyFor(recipe: Recipe): string {
		const ruler = !!recipe.reward && recipe.reward.source !== 'env';
		return ruler ? this.key.trim() : '';
	}

	/** "Remember in this tab": the key in sessionStorage (gone with the tab), or forgotten. */
	setRememberKey(on: boolean): void {
		this.rememberKey = on;
		this.keyChanged();
	}

	/** Keeps sessionStorage in step with the key field while remembering (never localStorage). */
	keyChanged(): void {
		const storage = tabStorage();
		try {
			if (this.rememberKey && this.key) storage?.setItem(JUDGE_KEY_STORAGE, this.key);
			else storage?.removeItem(JUDGE_KEY_STORAGE);
		} catch {
			// storage full or disabled: the key stays in memory
		}
	}

	/** A reward field's error once it shows (left, or Train pressed). */
	fieldError(field: RewardField): string | undefined {
		return this.touched[field] ? this.errors[field] : undefined;
	}

	/** The first reward field with an error, shown from now on; undefined when all are right. */
	check(): RewardField | undefined {
		const fields: RewardField[] = ['source', 'baseURL', 'model', 'rubric'];
		this.touched = Object.fromEntries(fields.map((f) => [f, true]));
		return fields.find((f) => this.errors[f]);
	}
}
