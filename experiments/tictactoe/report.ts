/**
 * @file The learn-tictactoe run's report (DIR/report.json): its shape, and reading it back
 * on resume (refusing options that would change a run already started) and writing it
 * atomically (a temporary file renamed over it, so a kill never leaves half a report).
 */
import { readFile, rename, writeFile } from 'node:fs/promises';
import type { Evaluation } from './evaluate';
import { LearnArgsError, type LearnOptions } from './options';
import { exists } from '../../scripts/exists';

/** What a report from before an option existed did. */
const BEFORE_OPTION: Partial<LearnOptions> = { grpoBase: 'sft-adapter' };

/** Options that define the run; a resumed call must not change them. */
const FIXED = ['size', 'rank', 'sftGames', 'sftEpochs', 'sftBatch', 'sftLr', 'grpoBase'] as const;

export interface CurvePoint {
	grpoStep: number;
	reward: number;
	illegal: number;
	loss: number | null;
	skipped: string | null;
	/** The step's learning rate (absent in reports from before --lr-end-ratio). */
	lr?: number;
	/** Mean -logprob of the rollouts' sampled tokens at the sampling temperature: how far
	 * the policy is from deterministic (0: every token certain). Absent in older reports. */
	sampledNll?: number;
	rolloutS: number;
	trainS: number;
}

export interface Report {
	options: LearnOptions;
	model?: { parameters: number; vocab: number };
	/** The model's step when SFT ended (GRPO step = step - sftEnd). */
	sftEnd: number | null;
	sft: { step: number; loss: number; lr: number }[];
	curve: CurvePoint[];
	evaluations: Evaluation[];
	/** Rollout rounds started (seeds the next scenarios). */
	rounds: number;
	calls: { startedAt: string; seconds: number; stoppedBy: string }[];
	done: boolean;
}

/** The report at `path`, or a new one. */
export async function loadReport(o: LearnOptions, path: string): Promise<Report> {
	if (!(await exists(path)))
		return {
			options: o,
			sftEnd: null,
			sft: [],
			curve: [],
			evaluations: [],
			rounds: 0,
			calls: [],
			done: false
		};
	const saved = JSON.parse(await readFile(path, 'utf8')) as Report;
	for (const k of FIXED) {
		const started = saved.options[k] ?? BEFORE_OPTION[k];
		if (started !== o[k])
			throw new LearnArgsError(
				`${o.out} was started with ${k} = ${started}, this call has ${o[k]}: ` +
					'give the same value to continue it, or a new --out.'
			);
	}
	return { ...saved, options: o };
}

export async function saveReport(report: Report, path: string): Promise<void> {
	await writeFile(path + '.tmp', JSON.stringify(report, null, 1) + '\n');
	await rename(path + '.tmp', path);
}
