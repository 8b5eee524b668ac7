/**
 * @file The Train panel's share link as Svelte 5 runes: an opening link fills the form
 * (noting what it could not use; the sharer's result shown, not trained on, and its curve
 * offered to compare with saved runs), and "Copy link" adds the shown run's result and curve
 * only while the form still holds that run's settings. The link's text is share-link.ts.
 */
import type { HistoryEntry } from '../agent/backend/types';
import type { ComparedRun } from './compare-runs';
import { fmt } from './format';
import type { RecipeForm } from './recipe-form.svelte';
import type { ReadLink, ShareSettings } from './share-link';
import { curveHistory, historyResult, type SharedResult } from './shared-result';

/** The shared run's name where it is compared with saved ones. */
export const SHARED_RUN = 'shared link';

/** Whether two settings make the same run (a judge typed in but not used changes nothing). */
function sameRun(a: ShareSettings, b: ShareSettings): boolean {
	const used = (s: ShareSettings) =>
		s.reward === 'env' ? { ...s, judgeUrl: '', judgeModel: '', rubric: '' } : s;
	return JSON.stringify(used(a)) === JSON.stringify(used(b));
}

/** A shared result in words: "step 12, reward 0.740, evaluation 0.810". */
export const resultText = (r: SharedResult) =>
	`step ${r.step}, reward ${fmt(r.reward)}` +
	(r.evaluation === undefined ? '' : `, evaluation ${fmt(r.evaluation)}`);

export class TrainLink {
	/** Sentences on what of the share link the page opened with was not used; [] if all was. */
	notice = $state<string[]>([]);
	/** The result a share link carried (the sharer's run, shown, not trained on). */
	sharedResult = $state<SharedResult | null>(null);
	/** The settings of the run shown (started, resumed or opened), for its result in a link. */
	#shown = $state<ShareSettings | null>(null);
	/** The settings of the link the page opened with (the shared run's). */
	#linked: ShareSettings | null = null;

	#form: RecipeForm;
	#history: () => HistoryEntry[];

	/** `history` returns the shown run's history lines. */
	constructor(form: RecipeForm, history: () => HistoryEntry[]) {
		this.#form = form;
		this.#history = history;
	}

	/** Fills the form from a share link, exactly (not rescaled for a software GPU). */
	open(link: ReadLink): void {
		this.#form.fill(link.settings);
		this.notice = link.ignored;
		this.sharedResult = link.result ?? null;
		this.#linked = link.settings;
	}

	/**
	 * The shared run as a run to compare: its curve, and its link's settings as Train runs them
	 * here (a link does not say how the sharer's device scaled them); null without a curve.
	 */
	sharedRun(): ComparedRun | null {
		const curve = this.sharedResult?.curve;
		if (!curve?.length || !this.#linked) return null;
		return {
			name: SHARED_RUN,
			recipe: this.#form.recipeOf(this.#linked),
			history: curveHistory(curve)
		};
	}

	/** The run shown now has these settings (null: not known). */
	showing(settings: ShareSettings | null): void {
		this.#shown = settings;
	}

	/**
	 * The shown run's result for a share link: its last trained step with its reward, its last
	 * evaluation and its curve; undefined when nothing is trained yet or the form no longer holds
	 * that run's settings.
	 */
	runResult(): SharedResult | undefined {
		const shown = this.#shown;
		if (!shown || !sameRun(shown, this.#form.shareSettings())) return undefined;
		return historyResult(this.#history());
	}
}
