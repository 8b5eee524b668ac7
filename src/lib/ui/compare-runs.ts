/**
 * @file Comparing saved runs: their settings side by side (what differs marked) and one
 * metric of their histories overlaid, as uPlot columns over the union of their steps (null
 * where a run has no value at a step). The teacher's "KL 0 vs 0.05" or "groups of 4 vs 16".
 */
import type { HistoryEntry } from '../agent/backend/types';
import type { Recipe } from '../run';
import { byStep, num } from './chart-series';

export interface ComparedRun {
	name: string;
	/** The recipe saved with the run (undefined for a run saved without one). */
	recipe: unknown;
	history: readonly HistoryEntry[];
}

export interface SettingRow {
	label: string;
	/** One value per run, in the runs' order ('—' where a run does not say). */
	values: string[];
	/** Whether the runs' values are not all the same. */
	differs: boolean;
}

/** The metrics a comparison can overlay: a history key each. */
export const COMPARE_METRICS = [
	{ key: 'train/reward', label: 'mean reward of the step' },
	{ key: 'val/reward', label: 'evaluation (fixed games)' },
	{ key: 'train/loss', label: 'GRPO loss' },
	{ key: 'train/kl', label: 'KL to the reference' }
] as const;
export type CompareMetric = (typeof COMPARE_METRICS)[number]['key'];

const SETTINGS: { label: string; of: (r: Recipe) => unknown }[] = [
	{ label: 'environment', of: (r) => r.environment },
	{ label: 'model', of: (r) => r.baseModel },
	{ label: 'warm start', of: (r) => (r.warmStart ? r.warmStart.adapter : 'none') },
	{ label: 'reward', of: (r) => r.reward?.source ?? 'env' },
	{ label: 'steps', of: (r) => r.grpo.steps },
	{
		label: 'groups × games',
		of: (r) => `${r.grpo.autoSize ? 'auto' : r.grpo.groups} × ${r.grpo.groupSize}`
	},
	{ label: 'learning rate', of: (r) => r.grpo.learningRate },
	{ label: 'KL β', of: (r) => r.grpo.klBeta },
	{ label: 'temperature', of: (r) => r.grpo.temperature },
	{ label: 'loss', of: (r) => r.grpo.loss },
	{ label: 'reply tokens', of: (r) => r.grpo.maxTokens },
	{ label: 'LoRA rank / α', of: (r) => `${r.lora.rank} / ${r.lora.alpha}` },
	{ label: 'seed', of: (r) => r.seed },
	{
		label: 'settings of the game',
		of: (r) => (r.envOptions ? JSON.stringify(r.envOptions) : 'defaults')
	}
];

/** A saved recipe read defensively: an old or foreign run may lack a field. */
function settingOf(recipe: unknown, of: (r: Recipe) => unknown): string {
	try {
		const v = of(recipe as Recipe);
		if (v === undefined || v === null) return '—';
		return String(v);
	} catch {
		return '—';
	}
}

/** The runs' settings side by side, one row per setting. */
export function compareSettings(runs: readonly ComparedRun[]): SettingRow[] {
	return SETTINGS.map(({ label, of }) => {
		const values = runs.map((r) => settingOf(r.recipe, of));
		return { label, values, differs: new Set(values).size > 1 };
	});
}

/** uPlot's columns: the steps any run has a value at, then one column per run. */
export function overlayColumns(
	runs: readonly ComparedRun[],
	metric: CompareMetric
): (number | null)[][] {
	const perRun = runs.map((run) => {
		const at = new Map<number, number>();
		for (const [step, h] of byStep(run.history)) {
			const v = num(h, metric);
			if (v !== null) at.set(step, v);
		}
		return at;
	});
	const steps = [...new Set(perRun.flatMap((m) => [...m.keys()]))].sort((a, b) => a - b);
	return [steps, ...perRun.map((m) => steps.map((s) => m.get(s) ?? null))];
}
