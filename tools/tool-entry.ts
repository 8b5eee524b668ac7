/**
 * @file What the tools' entry scripts (benchmarks, parity checks) share: a tagged stderr
 * log, an error's text, ONE JSON object on stdout, and the process's end: exit with main's
 * code (0 when it returns none), or print {error} as the JSON object and exit 1.
 */

/** A log to stderr, each line prefixed with [tag]. */
export const makeLog =
	(tag: string) =>
	(...x: unknown[]) =>
		console.error(`[${tag}]`, ...x);

/** An error's stack where it has one, else its string. */
export const errorText = (error: unknown) => String((error as Error)?.stack ?? error);

/** `value` as one JSON object (one space of indent) and a newline on stdout. */
export const printJson = (value: unknown) =>
	process.stdout.write(JSON.stringify(value, null, 1) + '\n');

/** Runs main and exits with its code; a throw prints {error} (one line) on stdout and exits 1. */
export function runMain(main: () => Promise<number | void>): void {
	main().then(
		(code) => process.exit(code ?? 0),
		(error) => {
			process.stdout.write(JSON.stringify({ error: errorText(error) }) + '\n');
			process.exit(1);
		}
	);
}
