/**
 * @file `cli train`: GRPO on an environment from the command line, through the same API an
 * agent author uses (TrainableModel + the Node LocalBackend).
 *
 *   train --env tictactoe --model DIR --steps N --groups G --group-size K --out DIR
 *       [--loss cispo|ppo] [--lr X] [--seed S] [--sft-first N] [--rank R] [--alpha A]
 *       [--temperature T] [--kl-beta B] [--max-tokens N]
 *
 * Each step plays G scenarios K times each (one scenario: the agent's mark and the
 * opponent's moves, from --seed, the step and the group; the K games differ by sampling),
 * then one GRPO step. OUT/history.jsonl gets a line per step (reward mean and spread, loss,
 * KL, grad norm, tokens, times) and OUT/checkpoints/<step>/ the adapter in PEFT's format with
 * the optimizer state. --sft-first N first runs N SFT steps (batches of G transcripts of
 * legal random play, agent/tictactoe-sft.ts), so the run ends at step N + --steps; a second
 * run with the same --out resumes from its last checkpoint and trains up to that step. Progress goes to stderr, one line per step;
 * the result is one JSON object: the step reached, the first and last steps' mean rewards.
 */
import { readdir } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { gatherTrajectoryGroups } from '../../src/lib/agent/gather';
import { TrainableModel } from '../../src/lib/agent/model';
import { LocalBackend } from '../../src/lib/agent/backend/node';
import * as tictactoe from '../../src/lib/agent/tictactoe';
import { legalPlayTranscripts } from '../../src/lib/agent/tictactoe-sft';
import { numberFlag, parseFlags, UsageError } from './args';
import { openModelFolder } from './model-folder';

export const TRAIN_USAGE =
	'usage: npm run -s cli -- train --env tictactoe --model DIR --steps N --groups G --group-size K ' +
	'--out DIR [--loss cispo|ppo] [--lr X] [--seed S] [--sft-first N] [--rank R] [--alpha A] ' +
	'[--temperature T] [--kl-beta B] [--max-tokens N]';

export interface TrainArgs {
	env: 'tictactoe';
	model: string;
	steps: number;
	groups: number;
	groupSize: number;
	out: string;
	loss: 'cispo' | 'ppo';
	lr?: number;
	seed: number;
	sftFirst: number;
	rank?: number;
	alpha?: number;
	temperature: number;
	klBeta: number;
	maxTokens: number;
}

const isCount = (n: number) => Number.isSafeInteger(n) && n >= 1;
const isPositive = (n: number) => Number.isFinite(n) && n > 0;

export function parseTrainArgs(argv: readonly string[]): TrainArgs {
	const f = parseFlags(
		argv,
		{
			env: {},
			model: {},
			steps: {},
			groups: {},
			'group-size': {},
			out: {},
			loss: {},
			lr: {},
			seed: {},
			'sft-first': {},
			rank: {},
			alpha: {},
			temperature: {},
			'kl-beta': {},
			'max-tokens': {}
		},
		TRAIN_USAGE
	);
	for (const required of ['env', 'model', 'steps', 'groups', 'group-size', 'out'] as const)
		if (f[required] === undefined) throw new UsageError(`--${required} is required`, TRAIN_USAGE);
	if (f.env !== 'tictactoe')
		throw new UsageError(`--env: '${f.env}' is not an environment (tictactoe)`, TRAIN_USAGE);
	const loss = f.loss ?? 'cispo';
	if (loss !== 'cispo' && loss !== 'ppo')
		throw new UsageError(`--loss: '${loss}' is not cispo or ppo`, TRAIN_USAGE);
	const n = (name: string, text: string | undefined, ok: (n: number) => boolean, what: string) =>
		numberFlag(name, text, ok, what, TRAIN_USAGE);
	return {
		env: 'tictactoe',
		model: f.model!,
		steps: n('steps', f.steps, (x) => Number.isSafeInteger(x) && x >= 0, 'an integer >= 0')!,
		groups: n('groups', f.groups, isCount, 'an integer >= 1')!,
		groupSize: n('group-size', f['group-size'], (x) => isCount(x) && x >= 2, 'an integer >= 2')!,
		out: f.out!,
		loss,
		lr: n('lr', f.lr, isPositive, 'a positive number'),
		seed: n('seed', f.seed, Number.isSafeInteger, 'an integer') ?? 0,
		sftFirst:
			n('sft-first', f['sft-first'], (x) => Number.isSafeInteger(x) && x >= 0, 'an integer >= 0') ??
			0,
		rank: n('rank', f.rank, isCount, 'an integer >= 1'),
		alpha: n('alpha', f.alpha, isPositive, 'a positive number'),
		temperature: n('temperature', f.temperature, isPositive, 'a positive number') ?? 1,
		klBeta: n('kl-beta', f['kl-beta'], (x) => Number.isFinite(x) && x >= 0, 'a number >= 0') ?? 0,
		maxTokens: n('max-tokens', f['max-tokens'], isCount, 'an integer >= 1') ?? 16
	};
}

export interface TrainOutput {
	out: string;
	step: number;
	/** Mean reward of the first and the last GRPO step of this invocation (null: none ran). */
	first_reward: number | null;
	last_reward: number | null;
	checkpoints: number[];
}

/** A scenario seed per (run seed, step, group): every game of a group plays the same one. */
const scenarioSeed = (seed: number, step: number, group: number) =>
	(seed * 1_000_003 + step * 1009 + group) >>> 0;

export async function runTrain(args: TrainArgs): Promise<TrainOutput> {
	await openModelFolder(args.model); // every file problem before the GPU is touched
	const out = resolve(args.out);
	const backend = new LocalBackend({ runDir: () => out });
	try {
		const model = new TrainableModel({
			name: basename(out),
			project: 'cli',
			baseModel: resolve(args.model),
			lora:
				args.rank === undefined
					? undefined
					: { rank: args.rank, alpha: args.alpha ?? 2 * args.rank },
			seed: args.seed
		});
		const registration = await model.register(backend);
		if (registration.step === 0 && args.sftFirst > 0) {
			const transcripts = legalPlayTranscripts(args.sftFirst * args.groups, args.seed);
			const reports = await model.trainSft(transcripts, {
				learningRate: args.lr,
				batchSize: args.groups
			});
			for (const r of reports)
				process.stderr.write(`sft step ${r.step}: loss ${r.metrics['sft/loss']?.toFixed(4)}\n`);
		}
		const client = model.openaiClient();
		let first: number | null = null;
		let last: number | null = null;
		// A step whose groups all tie (no signal) changes nothing and is retried with new
		// scenarios; `attempt` numbers the scenarios so a retry never replays the same ones.
		const target = args.sftFirst + args.steps;
		let attempt = await model.getStep();
		const maxAttempts = attempt + 4 * Math.max(1, target - attempt);
		for (let step = attempt; step < target && attempt < maxAttempts; attempt++) {
			const t0 = performance.now();
			const groups = await gatherTrajectoryGroups(
				Array.from({ length: args.groups }, (_, g) => {
					const scenario = scenarioSeed(args.seed, attempt, g);
					return Array.from({ length: args.groupSize }, (_, k) =>
						tictactoe.rollout(client, {
							model: model.name,
							seed: scenario,
							maxTokens: args.maxTokens,
							request: { temperature: args.temperature, seed: (scenario * 64 + k) * 16 }
						})
					);
				})
			);
			const rolloutMs = performance.now() - t0;
			const report = await model.train(
				groups,
				{
					loss: args.loss,
					learningRate: args.lr,
					klBeta: args.klBeta,
					temperature: args.temperature
				},
				{ 'train/rollout_ms': rolloutMs }
			);
			const reward = report.metrics['train/reward'];
			first ??= reward;
			last = reward;
			step = report.step;
			process.stderr.write(
				`step ${report.step}: reward ${reward.toFixed(3)}` +
					(report.skipped
						? ` (skipped: ${report.skipped})`
						: `, loss ${report.metrics['train/loss'].toFixed(4)}`) +
					'\n'
			);
		}
		const checkpoints = (await readdir(join(out, 'checkpoints')))
			.map(Number)
			.filter(Number.isInteger)
			.sort((a, b) => a - b);
		return {
			out,
			step: await model.getStep(),
			first_reward: first,
			last_reward: last,
			checkpoints
		};
	} finally {
		await backend.close();
	}
}
