/**
 * @file TabRL's command line (Node, WebGPU through Dawn), one subcommand per file under
 * scripts/cli/. Results are ONE JSON object on stdout; errors go to stderr as
 * `tabrl: KIND: message` with exit status 1; wrong flags print the usage line and exit 2;
 * a command may end otherwise after its result (`train`: 3 when 'stuck').
 */
import { ExitWith, UsageError } from './cli/args';

interface Command {
	usage: string;
	run(argv: string[]): Promise<unknown>;
}

/**
 * Each command's module is loaded only when it runs (Dawn, the tokenizers, the training
 * stack: ~1 s of imports for all of them), so `score` does not pay for `train`.
 */
const COMMANDS: Record<string, () => Promise<Command>> = {
	score: async () => {
		const m = await import('./cli/score');
		return { usage: m.SCORE_USAGE, run: (argv) => m.runScore(m.parseScoreArgs(argv)) };
	},
	serve: async () => {
		const m = await import('./cli/serve');
		return { usage: m.SERVE_USAGE, run: (argv) => m.runServe(m.parseServeArgs(argv)) };
	},
	generate: async () => {
		const m = await import('./cli/generate');
		return { usage: m.GENERATE_USAGE, run: (argv) => m.runGenerate(m.parseGenerateArgs(argv)) };
	},
	train: async () => {
		const m = await import('./cli/train');
		return { usage: m.TRAIN_USAGE, run: (argv) => m.runTrain(m.parseTrainArgs(argv)) };
	},
	play: async () => {
		const m = await import('./cli/play');
		return { usage: m.PLAY_USAGE, run: (argv) => m.runPlay(m.parsePlayArgs(argv)) };
	},
	judge: async () => {
		const m = await import('./cli/judge');
		return { usage: m.JUDGE_USAGE, run: (argv) => m.runJudge(m.parseJudgeArgs(argv)) };
	},
	export: async () => {
		const m = await import('./cli/export');
		return { usage: m.EXPORT_USAGE, run: (argv) => m.runExport(m.parseExportArgs(argv)) };
	}
};

/** Every command's usage line (loads them all: only for help and mistakes). */
async function usage(): Promise<string> {
	const commands = await Promise.all(Object.values(COMMANDS).map((load) => load()));
	return `usage: npm run -s cli -- COMMAND ...\ncommands:\n  ${commands
		.map((c) => c.usage.replace(/^usage: npm run -s cli -- /, ''))
		.join('\n  ')}`;
}

function exit(code: number, stdout?: string, stderr?: string): void {
	if (stderr) process.stderr.write(stderr.endsWith('\n') ? stderr : stderr + '\n');
	// Dawn may keep the event loop alive: exit once the output is written.
	if (stdout) process.stdout.write(stdout + '\n', () => process.exit(code));
	else process.exit(code);
}

async function main(argv: string[]): Promise<void> {
	const [name, ...rest] = argv;
	if (name === undefined || name === '--help' || name === '-h' || name === 'help')
		return exit(name === undefined ? 2 : 0, undefined, await usage());
	const load = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
	if (!load) return exit(2, undefined, `tabrl: unknown command '${name}'\n${await usage()}`);
	const command = await load();
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
