/**
 * @file Command-line flags of the CLI's subcommands: node's util.parseArgs in strict mode
 * (an unknown flag, a missing value or a stray argument is an error), with every problem
 * turned into a UsageError that carries the subcommand's usage line.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';

/** Wrong flags: printed with the usage line, exit status 2. */
export class UsageError extends Error {
	readonly kind = 'usage';
	constructor(
		message: string,
		readonly usage: string
	) {
		super(message);
		this.name = 'UsageError';
	}
}

/** A problem with the command's input that is not the model layer's (exit status 1). */
export class CliInputError extends Error {
	readonly kind = 'input';
	constructor(message: string) {
		super(message);
		this.name = 'CliInputError';
	}
}

/**
 * A command's result printed like any other (one JSON line on stdout) but with another
 * exit status: e.g. `train`'s run that ended 'stuck'.
 */
export class ExitWith {
	constructor(
		readonly result: unknown,
		readonly code: number
	) {}
}

export type StringFlags = Record<string, { short?: string }>;

/** Parses `--name VALUE` string flags (each at most once) and no positionals. */
export function parseFlags<F extends StringFlags>(
	argv: readonly string[],
	flags: F,
	usage: string
): Partial<Record<keyof F, string>> {
	const options: NonNullable<ParseArgsConfig['options']> = {};
	for (const [name, f] of Object.entries(flags))
		options[name] = { type: 'string', ...(f.short ? { short: f.short } : {}) };
	let values: Record<string, unknown>;
	try {
		({ values } = parseArgs({ args: [...argv], options, strict: true, allowPositionals: false }));
	} catch (error) {
		// Node's first line names the flag ("Unknown option '--idz'"); the rest is advice
		// about '--' that does not apply here.
		const message = String((error as Error).message)
			.split('\n')[0]
			.split('. To specify')[0];
		throw new UsageError(message, usage);
	}
	for (const [name, v] of Object.entries(values))
		if (typeof v !== 'string') throw new UsageError(`--${name} needs a value`, usage);
	// parseArgs keeps the last of repeated flags; a repeated input is more likely a mistake.
	for (const name of Object.keys(flags)) {
		const n = argv.filter((a) => a === `--${name}` || a.startsWith(`--${name}=`)).length;
		if (n > 1) throw new UsageError(`--${name} is given ${n} times`, usage);
	}
	return values as Partial<Record<keyof F, string>>;
}

/** "1,2, 3" -> [1, 2, 3]; each a non-negative integer. */
export function parseIdList(text: string, usage: string): number[] {
	const parts = text.split(',').map((s) => s.trim());
	if (parts.length === 1 && parts[0] === '') throw new UsageError('--ids is empty', usage);
	return parts.map((p) => {
		const n = Number(p);
		if (p === '' || !Number.isSafeInteger(n) || n < 0)
			throw new UsageError(
				`--ids: '${p}' is not a token id (comma-separated non-negative integers)`,
				usage
			);
		return n;
	});
}

/** A numeric flag's value (undefined when absent), checked by `ok`; a UsageError says `what` it must be. */
export function numberFlag(
	name: string,
	text: string | undefined,
	ok: (n: number) => boolean,
	what: string,
	usage: string
): number | undefined {
	if (text === undefined) return undefined;
	const n = Number(text);
	if (text.trim() === '' || !ok(n))
		throw new UsageError(`--${name}: '${text}' is not ${what}`, usage);
	return n;
}
