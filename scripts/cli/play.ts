/**
 * @file `cli play`: games without training, for baselines and checking a policy.
 *
 *   play --env ENV --policy random|expert|model [--games N] [--seed S] [--winning-value W]
 *       [--history-turns K|all] [--max-turns N] [--model DIR] [--adapter DIR|none]
 *       [--run OUT] [--temperature T] [--max-tokens N] [--games-out FILE.jsonl] [--changes SHARE]
 *       [--opponent random|perfect|mixed]
 *
 * random and expert are the environment's scripted players through the same rollout code
 * (no GPU); model plays the preset's model with its warm start (or --model, --adapter,
 * --run), greedy unless --temperature. Game i plays scenario S + i (default: the evaluation
 * seed). --games-out writes every game as ART's JSONL. --opponent perfect (tictactoe) plays a
 * minimax opponent: the draw rate says how often the agent holds it. stdout: one JSON object of
 * rates.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { LocalBackend } from '../../src/lib/agent/backend/node/backend';
import { groupsToJsonl } from '../../src/lib/agent/jsonl';
import { TrajectoryGroup } from '../../src/lib/agent/trajectory';
import { TrainableModel } from '../../src/lib/agent/model';
import { policyClient } from '../../src/lib/agent/policy-client';
import { NodeRunStore } from '../../src/lib/grpo/store/node/run-store';
import {
	ENVIRONMENT_NAMES,
	ENVIRONMENTS,
	EVAL_SEED,
	isEnvironmentName,
	preset,
	validateRecipe,
	type EnvironmentName,
	type EnvOptions,
	type Recipe
} from '../../src/lib/run';
import { playGames, summarizeGames, type PlaySummary } from '../../src/lib/run';
import { isOpponentKind, OPPONENT_KINDS } from '../../src/lib/agent/envs/tictactoe/rollout';
import { ensureBundledModel } from '../default-model';
import { CliInputError, numberFlag, parseFlags, UsageError } from './args';
import { STATIC_ROOT } from './static-root';

export const PLAY_USAGE =
	'usage: npm run -s cli -- play --env ENV --policy random|expert|model [--games N] [--seed S] ' +
	'[--winning-value W] [--history-turns K|all] [--max-turns N] [--model DIR] ' +
	'[--adapter DIR|none] [--run OUT] [--temperature T] [--max-tokens N] [--games-out FILE.jsonl] ' +
	'[--changes SHARE (inbox: the share 0..1 of emails a later email changes)] ' +
	'[--opponent random|perfect|mixed (tictactoe: a perfect opponent draws at best; mixed: each move one or the other)]';

export type PolicyName = 'random' | 'expert' | 'model';

export interface PlayArgs {
	env: EnvironmentName;
	policy: PolicyName;
	games: number;
	seed: number;
	envOptions: EnvOptions;
	model?: string;
	adapter?: string;
	run?: string;
	temperature: number;
	maxTokens?: number;
	gamesOut?: string;
}

const FLAGS = {
	env: {},
	policy: {},
	games: {},
	seed: {},
	'winning-value': {},
	'history-turns': {},
	'max-turns': {},
	changes: {},
	opponent: {},
	model: {},
	adapter: {},
	run: {},
	temperature: {},
	'max-tokens': {},
	'games-out': {}
};

export function parsePlayArgs(argv: readonly string[]): PlayArgs {
	const f = parseFlags(argv, FLAGS, PLAY_USAGE);
	if (f.env === undefined || !isEnvironmentName(f.env))
		throw new UsageError(
			`--env: ${f.env === undefined ? 'required' : `'${f.env}' is not an environment`} (${ENVIRONMENT_NAMES.join(', ')})`,
			PLAY_USAGE
		);
	const policies: PolicyName[] = ['random', 'expert', 'model'];
	if (f.policy === undefined || !policies.includes(f.policy as PolicyName))
		throw new UsageError(
			`--policy: ${f.policy ?? 'required'}: one of ${policies.join(', ')}`,
			PLAY_USAGE
		);
	const count = (name: keyof typeof FLAGS, min = 1) =>
		numberFlag(
			name,
			f[name],
			(x) => Number.isSafeInteger(x) && x >= min,
			`an integer >= ${min}`,
			PLAY_USAGE
		);
	const policy = f.policy as PolicyName;
	for (const flag of ['model', 'adapter', 'run'] as const)
		if (f[flag] !== undefined && policy !== 'model')
			throw new UsageError(`--${flag}: only with --policy model`, PLAY_USAGE);
	if (f.run !== undefined && (f.model !== undefined || f.adapter !== undefined))
		throw new UsageError(
			'--run: the run names its model and warm start; drop --model/--adapter',
			PLAY_USAGE
		);
	const history = f['history-turns'];
	const envOptions: EnvOptions = {};
	const wv = count('winning-value', 8);
	if (wv !== undefined) {
		if ((wv & (wv - 1)) !== 0) throw new UsageError('--winning-value: a power of two', PLAY_USAGE);
		envOptions.winningValue = wv;
	}
	if (history !== undefined)
		envOptions.historyTurns = history === 'all' ? null : count('history-turns', 0)!;
	const maxTurns = count('max-turns');
	if (maxTurns !== undefined) envOptions.maxTurns = maxTurns;
	const changes = numberFlag(
		'changes',
		f.changes,
		(x) => x >= 0 && x <= 1,
		'a share from 0 to 1',
		PLAY_USAGE
	);
	if (changes !== undefined) {
		if (f.env !== 'inbox') throw new UsageError('--changes: only for --env inbox', PLAY_USAGE);
		envOptions.changes = changes;
	}
	if (f.opponent !== undefined) {
		if (f.env !== 'tictactoe')
			throw new UsageError('--opponent: only for --env tictactoe', PLAY_USAGE);
		if (!isOpponentKind(f.opponent))
			throw new UsageError(
				`--opponent: ${f.opponent}: one of ${OPPONENT_KINDS.join(', ')}`,
				PLAY_USAGE
			);
		envOptions.opponent = f.opponent;
	}
	return {
		env: f.env as EnvironmentName,
		policy,
		games: count('games') ?? 200,
		seed:
			numberFlag(
				'seed',
				f.seed,
				(x) => Number.isSafeInteger(x) && x >= 0,
				'an integer >= 0',
				PLAY_USAGE
			) ?? EVAL_SEED,
		envOptions,
		model: f.model,
		adapter: f.adapter,
		run: f.run,
		temperature:
			numberFlag(
				'temperature',
				f.temperature,
				(x) => Number.isFinite(x) && x >= 0,
				'a number >= 0',
				PLAY_USAGE
			) ?? 0,
		maxTokens: count('max-tokens'),
		gamesOut: f['games-out']
	};
}

export interface PlayOutput extends PlaySummary {
	policy: PolicyName;
	seconds: number;
}

/** The model player: a TrainableModel on the Node backend (a throwaway run folder, or --run's). */
async function modelPlayer(args: PlayArgs, base: Recipe) {
	let spec: {
		baseModel: string;
		warmStart?: Recipe['warmStart'];
		runDir: string;
		name: string;
		temp?: string;
	};
	if (args.run) {
		const out = resolve(args.run);
		const meta = await new NodeRunStore(out).readMeta();
		if (!meta?.recipe)
			throw new CliInputError(
				`--run: ${out} holds no run of \`cli train\` (no run.json with a recipe)`
			);
		const recipe = validateRecipe(meta.recipe as Recipe);
		if (recipe.environment !== args.env)
			throw new CliInputError(`--run: ${out} is a ${recipe.environment} run, not ${args.env}`);
		spec = {
			baseModel: recipe.baseModel,
			warmStart: recipe.warmStart,
			runDir: out,
			name: basename(out)
		};
	} else {
		const baseModel = resolve(args.model ?? base.baseModel);
		const shipped =
			base.warmStart && baseModel === resolve(base.baseModel)
				? resolve(base.warmStart.adapter)
				: null;
		const adapter =
			args.adapter === 'none' ? null : args.adapter !== undefined ? resolve(args.adapter) : shipped;
		if (adapter && !existsSync(join(adapter, 'adapter_config.json')))
			throw new CliInputError(
				`--adapter: ${adapter} is not a PEFT adapter folder (no adapter_config.json)`
			);
		const temp = await mkdtemp(join(tmpdir(), 'tabrl-play-'));
		spec = {
			baseModel,
			warmStart: adapter ? { adapter, mode: 'merged' } : null,
			runDir: temp,
			name: 'play',
			temp
		};
	}
	await ensureBundledModel(spec.baseModel, STATIC_ROOT);
	const backend = new LocalBackend({ runDir: () => spec.runDir });
	const model = new TrainableModel({
		name: spec.name,
		project: 'cli',
		baseModel: spec.baseModel,
		warmStart: spec.warmStart ?? undefined,
		maxContext: base.maxContext
	});
	await model.register(backend);
	return {
		model,
		async close() {
			await backend.close();
			if (spec.temp) await rm(spec.temp, { recursive: true, force: true });
		}
	};
}

export async function runPlay(args: PlayArgs): Promise<PlayOutput> {
	const env = ENVIRONMENTS[args.env];
	const base = preset(args.env, STATIC_ROOT);
	const envOptions = { ...base.envOptions, ...args.envOptions };
	const t0 = performance.now();
	const options = {
		games: args.games,
		seed: args.seed,
		temperature: args.temperature,
		maxTokens: args.maxTokens ?? base.grpo.maxTokens,
		seeded: true,
		envOptions
	};
	let games;
	if (args.policy === 'model') {
		const player = await modelPlayer(args, base);
		try {
			games = await playGames(env, player.model.openaiClient(), player.model.name, options);
		} finally {
			await player.close();
		}
	} else {
		const kind = args.policy;
		games = await playGames(env, (r) => policyClient(env.scripted(kind, r)), kind, options);
	}
	// ART's JSONL: a TrajectoryGroup a line; each game its own scenario, so a group of one
	if (args.gamesOut)
		await writeFile(
			resolve(args.gamesOut),
			groupsToJsonl(games.map((game) => new TrajectoryGroup([game])))
		);
	return {
		...summarizeGames(env, games),
		policy: args.policy,
		seconds: (performance.now() - t0) / 1000
	};
}
