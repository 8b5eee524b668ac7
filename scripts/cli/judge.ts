/**
 * @file `cli judge`: RULER's scores for one group of trajectories from any OpenAI-compatible
 * judge.
 *
 *   judge --base-url URL --model NAME --group FILE.jsonl [--rubric FILE]
 *       [--api-key-env VAR] [--timeout-ms N] [--max-retries N]
 *
 * The group is ART's JSONL (ids: 1-based positions); the API key only from the variable
 * --api-key-env names, never the command line. stdout: {"scores": [{"trajectory_id",
 * "score", "explanation"}]}; a judge failing after retries and the re-ask: status 1.
 */
import { readFile } from 'node:fs/promises';
import { groupsFromJsonl } from '../../src/lib/agent/jsonl';
import { checkJudgeable, rulerReport } from '../../src/lib/agent/ruler';
import type { Trajectory } from '../../src/lib/agent/trajectory';
import { CliInputError, numberFlag, parseFlags, UsageError } from './args';

export const JUDGE_USAGE =
	'usage: npm run -s cli -- judge --base-url URL --model NAME --group FILE.jsonl ' +
	'[--rubric FILE] [--api-key-env VAR] [--timeout-ms N] [--max-retries N]';

export interface JudgeArgs {
	baseURL: string;
	model: string;
	group: string;
	rubric?: string;
	apiKeyEnv?: string;
	timeoutMs?: number;
	maxRetries?: number;
}

export interface JudgeOutput {
	scores: { trajectory_id: string; score: number; explanation: string }[];
}

const FLAGS = {
	'base-url': {},
	model: {},
	group: {},
	rubric: {},
	'api-key-env': {},
	'timeout-ms': {},
	'max-retries': {}
};

export function parseJudgeArgs(argv: readonly string[]): JudgeArgs {
	const f = parseFlags(argv, FLAGS, JUDGE_USAGE);
	for (const name of ['base-url', 'model', 'group'] as const)
		if (f[name] === undefined) throw new UsageError(`--${name} is required`, JUDGE_USAGE);
	const int = (name: string, min: number) =>
		numberFlag(
			name,
			f[name as keyof typeof FLAGS],
			(n) => Number.isInteger(n) && n >= min,
			`an integer >= ${min}`,
			JUDGE_USAGE
		);
	return {
		baseURL: f['base-url']!,
		model: f.model!,
		group: f.group!,
		rubric: f.rubric,
		apiKeyEnv: f['api-key-env'],
		timeoutMs: int('timeout-ms', 1),
		maxRetries: int('max-retries', 0)
	};
}

async function readText(flag: string, file: string): Promise<string> {
	try {
		return await readFile(file, 'utf8');
	} catch (error) {
		throw new CliInputError(`--${flag}: cannot read ${file} (${(error as Error).message})`);
	}
}

/**
 * The group's trajectories: a file of one group (ART's JSONL: a TrajectoryGroup a line), or
 * of lone trajectories, one a line (each a group of one), taken together as the group.
 */
function readGroup(text: string): Trajectory[] {
	const groups = groupsFromJsonl(text);
	if (groups.length === 0) throw new CliInputError('--group: the file holds no trajectory');
	if (groups.length === 1) return groups[0].trajectories;
	if (groups.every((g) => g.trajectories.length === 1)) return groups.map((g) => g.trajectories[0]);
	throw new CliInputError(`--group: the file holds ${groups.length} groups; give one`);
}

export async function runJudge(args: JudgeArgs): Promise<JudgeOutput> {
	let apiKey: string | undefined;
	if (args.apiKeyEnv !== undefined) {
		apiKey = process.env[args.apiKeyEnv];
		if (!apiKey)
			throw new CliInputError(
				`--api-key-env: the environment variable ${args.apiKeyEnv} is not set (or empty)`
			);
	}
	const rubric = args.rubric === undefined ? undefined : await readText('rubric', args.rubric);
	const trajectories = readGroup(await readText('group', args.group));
	if (trajectories.length === 0) throw new CliInputError('--group: the file holds no trajectory');
	checkJudgeable(trajectories);
	const { scores } = await rulerReport(
		trajectories.map((t) => t.messages()),
		{
			judge: {
				baseURL: args.baseURL,
				apiKey,
				model: args.model,
				timeoutMs: args.timeoutMs,
				maxRetries: args.maxRetries
			},
			rubric,
			tools: trajectories[0].tools
		}
	);
	return {
		scores: scores.map((s) => ({
			trajectory_id: s.trajectory_id,
			score: s.score,
			explanation: s.explanation
		}))
	};
}
