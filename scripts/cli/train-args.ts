/**
 * @file `cli train`'s flags: the usage line, TrainArgs (each field undefined when its flag is
 * absent), and their parsing and range checks (UsageError on a bad flag).
 */
import type { WarmStartMode } from '../../src/lib/model/hf/warm-start';
import {
	ENVIRONMENT_NAMES,
	isEnvironmentName,
	REWARD_SOURCES,
	type EnvironmentName,
	type RewardSource
} from '../../src/lib/run';
import { OPPONENT_KINDS, type OpponentKind } from '../../src/lib/agent/envs/tictactoe/rollout';
import { INVALID_REPLY_RULES, type InvalidReplyRule } from '../../src/lib/agent/envs/environment';
import { isUpdateCount, MAX_UPDATE_COUNT } from '../../src/lib/grpo/train-step';
import { numberFlag, parseFlags, UsageError } from './args';

export const TRAIN_USAGE =
	`usage: npm run -s cli -- train --out DIR [--env ${ENVIRONMENT_NAMES.join('|')}] [--model DIR|KEY|URL] ` +
	'[--warm-start preset|none|DIR] [--warm-start-mode merged|stacked] [--steps N] [--groups auto|G] ' +
	'[--group-size K] [--lr X] [--warmup N] [--loss cispo|ppo] [--kl-beta B] [--temperature T] ' +
	'[--max-tokens N] [--seed S] [--rank R] [--alpha A] [--sft-first N] [--eval-every N] ' +
	'[--eval-games N] [--max-no-signal N] [--reward env|ruler|ruler+env] [--judge-base-url URL] ' +
	'[--judge-model NAME] [--judge-api-key-env VAR] [--rubric FILE] [--changes SHARE] [--opponent random|perfect|mixed] ' +
	'[--on-invalid-reply end|random-move] ' +
	'[--scale-rewards yes|no] [--iterations N] [--mini-batches M] [--token-budget N] [--gpu-memory GIB]\n' +
	"    defaults: the --env's preset (src/lib/run/presets.ts); again with the same --out: " +
	'continue that run (its saved recipe, changed by the flags given)\n' +
	"    --sft-first N: first N SFT steps on the environment's demonstrations (N x G games, " +
	'G a step), then --steps GRPO steps\n' +
	"    --groups auto (the presets' default): games per step sized so a step takes 2-4 s on this " +
	"device (12-20 s for 2048), starting at the preset's; --groups G: G groups every step\n" +
	'    --changes SHARE (inbox): the share 0..1 of emails a later email changes, so their ' +
	'questions need two emails\n' +
	'    --opponent KIND (tictactoe): whom the games are played against; evaluations stay against ' +
	"the random opponent (ART's measure)\n" +
	'    --on-invalid-reply random-move (tictactoe, 2048): an invalid reply is replaced by a random ' +
	"move and the game goes on (timing stand-ins with random weights); evaluations keep ART's rule\n" +
	"    --scale-rewards no: advantages r - mean (Dr. GRPO) instead of ART's (r - mean) / std\n" +
	"    --iterations N, --mini-batches M: N passes over a step's games, each M optimizer updates " +
	'(default 1 and 1, as ART)\n' +
	'    --warmup N: the learning rate rises linearly over the first N GRPO steps (default 0: the ' +
	'whole rate from the first)\n' +
	"    --token-budget N: padded tokens per micro-batch of the update (the preset's is sized for " +
	'a weak GPU; more on a big one: fewer micro-batches)\n' +
	'    --gpu-memory GIB: GPU memory the model may use (WebGPU cannot tell it): the update then keeps ' +
	'every layer\u2019s activations where they fit instead of recomputing them, and calls past it are refused';

/** Exit status of a run that ended 'stuck' (no reward spread: nothing to learn from). */
export const EXIT_STUCK = 3;

/** The flags as given: each field undefined when its flag is absent. */
export interface TrainArgs {
	out: string;
	env?: EnvironmentName;
	model?: string;
	/** 'preset' (the environment's shipped one), a preset's name, 'none', or a folder. */
	warmStart?: string;
	warmStartMode?: WarmStartMode;
	steps?: number;
	/** 'auto': sized to the device (the presets' default; run/sizing.ts). */
	groups?: number | 'auto';
	groupSize?: number;
	lr?: number;
	/** GRPO steps over which the learning rate warms up (grpo.warmupSteps). */
	warmup?: number;
	loss?: 'cispo' | 'ppo';
	klBeta?: number;
	temperature?: number;
	maxTokens?: number;
	seed?: number;
	rank?: number;
	alpha?: number;
	sftFirst?: number;
	evalEvery?: number;
	evalGames?: number;
	maxNoSignal?: number;
	reward?: RewardSource;
	judgeBaseUrl?: string;
	judgeModel?: string;
	/** The environment variable holding the judge's API key (never the key itself). */
	judgeApiKeyEnv?: string;
	/** Advantages divided by the group's std (ART's default) or not. */
	scaleRewards?: boolean;
	iterations?: number;
	miniBatches?: number;
	/** Padded tokens per micro-batch of the update (grpo.tokenBudget). */
	tokenBudget?: number;
	/** GiB of GPU memory the model may use (the device's, not the recipe's: not saved). */
	gpuMemory?: number;
	/** A file whose text is RULER's rubric. */
	rubric?: string;
	/** The rubric file's text (runTrain reads it). */
	rubricText?: string;
	/** inbox: the share of emails a later email changes (envOptions.changes). */
	changes?: number;
	/** tictactoe: the training games' opponent (envOptions.opponent). */
	opponent?: OpponentKind;
	/** tictactoe, 2048: what an invalid reply does (envOptions.onInvalidReply). */
	onInvalidReply?: InvalidReplyRule;
}

const isCount = (n: number, min = 1) => Number.isSafeInteger(n) && n >= min;
const isPositive = (n: number) => Number.isFinite(n) && n > 0;

const FLAGS = {
	out: {},
	env: {},
	model: {},
	'warm-start': {},
	'warm-start-mode': {},
	steps: {},
	groups: {},
	'group-size': {},
	lr: {},
	warmup: {},
	loss: {},
	'kl-beta': {},
	temperature: {},
	'max-tokens': {},
	seed: {},
	rank: {},
	alpha: {},
	'sft-first': {},
	'eval-every': {},
	'eval-games': {},
	'max-no-signal': {},
	reward: {},
	'judge-base-url': {},
	'judge-model': {},
	'judge-api-key-env': {},
	rubric: {},
	changes: {},
	opponent: {},
	'on-invalid-reply': {},
	'scale-rewards': {},
	iterations: {},
	'mini-batches': {},
	'token-budget': {},
	'gpu-memory': {}
};

export function parseTrainArgs(argv: readonly string[]): TrainArgs {
	const f = parseFlags(argv, FLAGS, TRAIN_USAGE);
	if (f.out === undefined) throw new UsageError('--out is required', TRAIN_USAGE);
	const oneOf = <T extends string>(
		name: string,
		value: string | undefined,
		allowed: readonly T[]
	) => {
		if (value !== undefined && !allowed.includes(value as T))
			throw new UsageError(`--${name}: '${value}' is not ${allowed.join(' or ')}`, TRAIN_USAGE);
		return value as T | undefined;
	};
	const n = (name: keyof typeof FLAGS, ok: (n: number) => boolean, what: string) =>
		numberFlag(name, f[name], ok, what, TRAIN_USAGE);
	const count = (name: keyof typeof FLAGS, min = 1) =>
		n(name, (x) => isCount(x, min), `an integer >= ${min}`);
	if (f.env !== undefined && !isEnvironmentName(f.env))
		throw new UsageError(
			`--env: '${f.env}' is not an environment (${ENVIRONMENT_NAMES.join(', ')})`,
			TRAIN_USAGE
		);
	for (const name of [
		'out',
		'model',
		'warm-start',
		'judge-base-url',
		'judge-model',
		'judge-api-key-env',
		'rubric'
	] as const)
		if (f[name] !== undefined && f[name].trim() === '')
			throw new UsageError(`--${name} is empty`, TRAIN_USAGE);
	return {
		out: f.out,
		env: f.env as EnvironmentName | undefined,
		model: f.model,
		warmStart: f['warm-start'],
		warmStartMode: oneOf('warm-start-mode', f['warm-start-mode'], ['merged', 'stacked']),
		steps: count('steps', 0),
		groups: f.groups === 'auto' ? 'auto' : count('groups'),
		groupSize: count('group-size', 2),
		lr: n('lr', isPositive, 'a positive number'),
		warmup: count('warmup', 0),
		loss: oneOf('loss', f.loss, ['cispo', 'ppo']),
		klBeta: n('kl-beta', (x) => Number.isFinite(x) && x >= 0, 'a number >= 0'),
		temperature: n('temperature', isPositive, 'a positive number'),
		maxTokens: count('max-tokens'),
		seed: n('seed', Number.isSafeInteger, 'an integer'),
		rank: count('rank'),
		alpha: n('alpha', isPositive, 'a positive number'),
		sftFirst: count('sft-first', 0),
		evalEvery: count('eval-every', 0),
		evalGames: count('eval-games'),
		maxNoSignal: count('max-no-signal'),
		reward: oneOf('reward', f.reward, REWARD_SOURCES),
		judgeBaseUrl: f['judge-base-url'],
		judgeModel: f['judge-model'],
		judgeApiKeyEnv: f['judge-api-key-env'],
		rubric: f.rubric,
		changes: n('changes', (x) => x >= 0 && x <= 1, 'a share from 0 to 1'),
		opponent: oneOf('opponent', f.opponent, OPPONENT_KINDS),
		onInvalidReply: oneOf('on-invalid-reply', f['on-invalid-reply'], INVALID_REPLY_RULES),
		scaleRewards:
			f['scale-rewards'] === undefined
				? undefined
				: oneOf('scale-rewards', f['scale-rewards'], ['yes', 'no']) === 'yes',
		iterations: n('iterations', isUpdateCount, `an integer 1-${MAX_UPDATE_COUNT}`),
		miniBatches: n('mini-batches', isUpdateCount, `an integer 1-${MAX_UPDATE_COUNT}`),
		tokenBudget: count('token-budget'),
		gpuMemory: n('gpu-memory', isPositive, 'a positive number of GiB')
	};
}
