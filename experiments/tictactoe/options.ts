/**
 * @file The flags of experiments/learn-tictactoe.ts: one typed configuration with defaults
 * for the GPU machine's run and for the `--tiny` smoke run (SwiftShader, a few minutes), as the
 * house keeps a run's configuration (typed, defaults, only what differs is written).
 * Why the defaults are what they are: the header of experiments/learn-tictactoe.ts.
 */
import { resolve } from 'node:path';

export interface LearnOptions {
	/** The run's folder: model/, run/ (checkpoints, history.jsonl), report.json. */
	out: string;
	/** Restore the state saved there (tictactoe/state.ts) when `out` holds no run yet. */
	loadState?: string;
	/** Save the resumable state there at the end of the call. */
	saveState?: string;
	tiny: boolean;
	/** Model size (scripts/tictactoe-model.ts MODEL_SIZES). */
	size: 'small' | 'tiny';
	/** A GRPO group's games: 'shared' plays one scenario (the agent's mark and the
	 * opponent's draws) 16 times; 'distinct' shares the mark and gives each game its own
	 * opponent draws (as ART's groups of independent games), so a group keeps a reward
	 * spread when the policy has become near-deterministic. */
	opponents: 'shared' | 'distinct';
	/** LoRA rank; alpha is twice it. */
	rank: number;
	/** Transcripts of random legal play, passes over them, transcripts per step, peak lr. */
	sftGames: number;
	sftEpochs: number;
	sftBatch: number;
	sftLr: number;
	/** GRPO steps, groups per step, games per group, learning rate. */
	steps: number;
	groups: number;
	groupSize: number;
	lr: number;
	/** GRPO's lr at --steps as a fraction of --lr, reached linearly (1: constant). */
	lrEndRatio: number;
	/** Sampling temperature of the GRPO rollouts. */
	temperature: number;
	/** What GRPO trains: 'sft-adapter' trains on in SFT's adapter (the base stays the random
	 * init); 'sft-merged' folds SFT's adapter into the base weights (tictactoe/merge-sft.ts)
	 * and trains a fresh adapter, so that the LoRA-off reference is the SFT policy. */
	grpoBase: 'sft-adapter' | 'sft-merged';
	/** GRPO's KL penalty to the LoRA-off model, the SFT policy with 'sft-merged'; 0: none
	 * (always with 'sft-adapter'). */
	klBeta: number;
	/** Evaluation games (fixed seeds) and how often (GRPO steps) to evaluate. */
	evalGames: number;
	evalEvery: number;
	/** Reply tokens at most (a move is 9 tokens with the tic-tac-toe tokenizer). */
	maxTokens: number;
	/** Padded tokens per micro-batch (B x T) in SFT and GRPO steps. */
	tokenBudget: number;
	/** Rounds in a row without any reward spread (no GRPO step) before the run stops. */
	maxNoSignal: number;
	/** Stop (resumable) before a phase that would end after this many seconds. */
	timeLimitS: number;
}

type Tunable = Omit<LearnOptions, 'out' | 'tiny' | 'loadState' | 'saveState'>;

export const DEFAULTS: Record<'full' | 'tiny', Tunable> = {
	full: {
		size: 'small',
		opponents: 'distinct',
		rank: 64,
		sftGames: 16384,
		sftEpochs: 1,
		sftBatch: 64,
		sftLr: 1e-3,
		steps: 250,
		groups: 32,
		groupSize: 16,
		lr: 2e-4,
		lrEndRatio: 1,
		temperature: 1,
		grpoBase: 'sft-merged',
		klBeta: 0.05,
		evalGames: 200,
		evalEvery: 10,
		maxTokens: 16,
		tokenBudget: 32768,
		maxNoSignal: 20,
		timeLimitS: 540
	},
	tiny: {
		size: 'tiny',
		opponents: 'distinct',
		rank: 4,
		sftGames: 8,
		sftEpochs: 1,
		sftBatch: 4,
		sftLr: 1e-2,
		steps: 2,
		groups: 2,
		groupSize: 2,
		lr: 1e-3,
		lrEndRatio: 1,
		temperature: 1,
		grpoBase: 'sft-merged',
		klBeta: 0.05,
		evalGames: 4,
		evalEvery: 1,
		maxTokens: 10,
		tokenBudget: 4096,
		maxNoSignal: 2,
		timeLimitS: 1800
	}
};

export class LearnArgsError extends Error {
	readonly kind = 'learn-args';
	constructor(message: string) {
		super(message);
		this.name = 'LearnArgsError';
	}
}

const FLAGS: Record<string, keyof Tunable> = {
	size: 'size',
	opponents: 'opponents',
	rank: 'rank',
	'sft-games': 'sftGames',
	'sft-epochs': 'sftEpochs',
	'sft-batch': 'sftBatch',
	'sft-lr': 'sftLr',
	steps: 'steps',
	groups: 'groups',
	'group-size': 'groupSize',
	lr: 'lr',
	'lr-end-ratio': 'lrEndRatio',
	temperature: 'temperature',
	'grpo-base': 'grpoBase',
	'kl-beta': 'klBeta',
	'eval-games': 'evalGames',
	'eval-every': 'evalEvery',
	'max-tokens': 'maxTokens',
	'token-budget': 'tokenBudget',
	'max-no-signal': 'maxNoSignal',
	'time-limit-s': 'timeLimitS'
};

/** The flags whose value is one of a few words. */
const CHOICES: Partial<Record<keyof Tunable, readonly string[]>> = {
	size: ['small', 'tiny'] satisfies Tunable['size'][],
	opponents: ['shared', 'distinct'] satisfies Tunable['opponents'][],
	grpoBase: ['sft-adapter', 'sft-merged'] satisfies Tunable['grpoBase'][]
};

export const USAGE =
	'usage: npx tsx experiments/learn-tictactoe.ts --out DIR [--tiny] [--load-state DIR] [--save-state DIR] ' +
	Object.keys(FLAGS)
		.map((f) => `[--${f} N]`)
		.join(' ');

/** Parses `--out DIR [--tiny] [--flag value ...]`; unknown flags and bad values are errors. */
export function parseLearnArgs(argv: readonly string[]): LearnOptions {
	const tiny = argv.includes('--tiny');
	const o: Tunable = { ...DEFAULTS[tiny ? 'tiny' : 'full'] };
	let out: string | undefined;
	const paths: Pick<LearnOptions, 'loadState' | 'saveState'> = {};
	for (let i = 0; i < argv.length; i++) {
		const arg = argv[i];
		if (arg === '--tiny') continue;
		const name = arg.startsWith('--') ? arg.slice(2) : undefined;
		const value = argv[i + 1];
		if (name === undefined || value === undefined)
			throw new LearnArgsError(`unexpected '${arg}'. ${USAGE}`);
		i++;
		if (name === 'out') {
			out = value;
			continue;
		}
		if (name === 'load-state' || name === 'save-state') {
			paths[name === 'load-state' ? 'loadState' : 'saveState'] = resolve(value);
			continue;
		}
		const key = FLAGS[name];
		if (!key) throw new LearnArgsError(`unknown flag --${name}. ${USAGE}`);
		const choices = CHOICES[key];
		if (choices) {
			if (!choices.includes(value))
				throw new LearnArgsError(
					`--${name} must be ${choices.map((c) => `'${c}'`).join(' or ')}, got '${value}'.`
				);
			(o as unknown as Record<string, string>)[key] = value;
			continue;
		}
		const n = Number(value);
		if (!(Number.isFinite(n) && n >= 0))
			throw new LearnArgsError(`--${name} must be a non-negative number, got '${value}'.`);
		(o as unknown as Record<string, number>)[key] = n;
	}
	if (!out) throw new LearnArgsError(`--out DIR is required. ${USAGE}`);
	for (const k of [
		'sftBatch',
		'groups',
		'groupSize',
		'evalGames',
		'evalEvery',
		'maxNoSignal'
	] as const)
		if (!(Number.isInteger(o[k]) && o[k] >= 1))
			throw new LearnArgsError(`${k} must be a positive integer, got ${o[k]}.`);
	if (o.grpoBase === 'sft-adapter') {
		// over SFT's adapter the LoRA-off reference would be the random base model
		if (argv.includes('--kl-beta') && o.klBeta > 0)
			throw new LearnArgsError(
				"--kl-beta needs --grpo-base sft-merged: over SFT's adapter, the LoRA-off " +
					'reference would be the random base model.'
			);
		o.klBeta = 0;
	}
	return { out: resolve(out), tiny, ...paths, ...o };
}
