/**
 * @file TabRL's command line (Node, WebGPU through Dawn): the interface that tests,
 * benchmarks and users share. One subcommand per file under scripts/cli/.
 *
 *   npm run -s cli -- score --model DIR (--ids 1,2,3 | --text STRING | --chat FILE)
 *
 * Results are ONE JSON object on stdout. Errors go to stderr as `tabrl: KIND: message`
 * (KIND is the typed error's `kind`, e.g. missing-file, unsupported-architecture) with
 * exit status 1; wrong flags print the usage line and exit with 2. A command may print its
 * result and end with another status (`train`: 3 when the run ends 'stuck').
 */
import { ExitWith, UsageError } from './cli/args';
import { parseScoreArgs, runScore, SCORE_USAGE } from './cli/score';
import { GENERATE_USAGE, parseGenerateArgs, runGenerate } from './cli/generate';
import { parseServeArgs, runServe, SERVE_USAGE } from './cli/serve';
import { parseTrainArgs, runTrain, TRAIN_USAGE } from './cli/train';
import { parsePlayArgs, PLAY_USAGE, runPlay } from './cli/play';
import { JUDGE_USAGE, parseJudgeArgs, runJudge } from './cli/judge';

const COMMANDS: Record<string, { usage: string; run(argv: string[]): Promise<unknown> }> = {
	score: { usage: SCORE_USAGE, run: (argv) => runScore(parseScoreArgs(argv)) },
	serve: { usage: SERVE_USAGE, run: (argv) => runServe(parseServeArgs(argv)) },
	generate: { usage: GENERATE_USAGE, run: (argv) => runGenerate(parseGenerateArgs(argv)) },
	train: { usage: TRAIN_USAGE, run: (argv) => runTrain(parseTrainArgs(argv)) },
	play: { usage: PLAY_USAGE, run: (argv) => runPlay(parsePlayArgs(argv)) },
	judge: { usage: JUDGE_USAGE, run: (argv) => runJudge(parseJudgeArgs(argv)) }
};
const USAGE = `usage: npm run -s cli -- COMMAND ...\ncommands:\n  ${Object.values(COMMANDS)
	.map((c) => c.usage.replace(/^usage: npm run -s cli -- /, ''))
	.join('\n  ')}`;

function exit(code: number, stdout?: string, stderr?: string): void {
	if (stderr) process.stderr.write(stderr.endsWith('\n') ? stderr : stderr + '\n');
	// Dawn may keep the event loop alive: exit once the output is written.
	if (stdout) process.stdout.write(stdout + '\n', () => process.exit(code));
	else process.exit(code);
}

async function main(argv: string[]): Promise<void> {
	const [name, ...rest] = argv;
	if (name === undefined || name === '--help' || name === '-h' || name === 'help')
		return exit(name === undefined ? 2 : 0, undefined, USAGE);
	const command = COMMANDS[name];
	if (!command) return exit(2, undefined, `tabrl: unknown command '${name}'\n${USAGE}`);
	if (rest.includes('--help') || rest.includes('-h')) return exit(0, undefined, command.usage);
	try {
		const result = await command.run(rest);
		if (result instanceof ExitWith) exit(result.code, JSON.stringify(result.result));
		else exit(0, JSON.stringify(result));
	} catch (error) {
		if (error instanceof UsageError)
			return exit(2, undefined, `tabrl: ${error.message}\n${error.usage}`);
		const e = error as { kind?: unknown; message?: unknown; stack?: unknown };
		const typed = typeof e?.kind === 'string' && typeof e.message === 'string';
		// Typed errors say what to do; anything else is a bug: show its stack.
		exit(
			1,
			undefined,
			typed ? `tabrl: ${e.kind}: ${e.message}` : `tabrl: ${String(e?.stack ?? error)}`
		);
	}
}

void main(process.argv.slice(2));
