/**
 * @file Runs the CLI as a user does (`tsx scripts/cli.ts ...`, as `npm run cli` does) in a
 * child process (or any command in the project's root, e.g. `npm run -s cli`), and hands
 * back its exit code and output whatever the code.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { UsageError } from '../../../scripts/cli/args';

const ROOT = join(import.meta.dirname, '../../..');
const TSX = join(ROOT, 'node_modules/.bin/tsx');
const CLI = join(ROOT, 'scripts/cli.ts');

export interface CliRun {
	code: number;
	stdout: string;
	stderr: string;
}

/** Runs `file args` in the project's root; killed (code -1) after `timeoutMs`. */
export function runCommand(file: string, args: string[], timeoutMs: number): Promise<CliRun> {
	return new Promise((resolve) => {
		execFile(file, args, { cwd: ROOT, timeout: timeoutMs }, (error, stdout, stderr) => {
			const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
			resolve({ code, stdout, stderr });
		});
	});
}

/** The CLI with `args` (what follows `npm run -s cli --`). */
export function runCli(args: string[], timeoutMs: number): Promise<CliRun> {
	return runCommand(TSX, [CLI, ...args], timeoutMs);
}

/**
 * What the CLI prints for a usage mistake (exit 2: `tabrl: MESSAGE` then the command's usage
 * line), from the command's own parser in this process: each command's tests run the CLI in a
 * child process for one such mistake (the exit code and the printing), and check the rest of
 * their flags here, a second of process start-up each saved.
 */
export function usageText(parse: (argv: string[]) => unknown, argv: string[]): string {
	try {
		parse(argv);
	} catch (error) {
		if (error instanceof UsageError) return `tabrl: ${error.message}\n${error.usage}`;
		throw error;
	}
	throw new Error(`'${argv.join(' ')}' parsed without a usage error`);
}
