/**
 * @file What the round trips' entry scripts (export-roundtrip.ts, peft-roundtrip.ts) share:
 * reading `MODE DIR [--layers N] ...`, exporting each case of a plan with a failure kept as
 * {name, error}, and holding a GPU for the run (its adapter logged, destroyed at the end).
 */
import { acquireGpu, type Gpu } from '../../src/lib/gpu/device';
import { errorText } from '../tool-entry';

export interface RoundTripArgs {
	mode: string;
	/** The folder the plan and both halves' files live in. */
	root: string;
	/** --layers N (an integer >= 1), when given. */
	numLayers?: number;
	/** --tiny */
	tiny: boolean;
	/** The value after --NAME, when given. */
	option(name: string): string | undefined;
}

/**
 * The command line after the script: MODE (one of `modes`) and DIR first. Prints `usage`
 * (with the reason where one is more precise) and returns exit code 2 when it does not fit.
 */
export function parseRoundTripArgs(
	argv: string[],
	modes: string[],
	usage: string
): RoundTripArgs | 2 {
	const [mode, root] = argv;
	if (!modes.includes(mode) || !root || root.startsWith('-')) {
		console.error(usage);
		return 2;
	}
	const option = (name: string) => {
		const i = argv.indexOf(`--${name}`);
		return i >= 0 ? argv[i + 1] : undefined;
	};
	const numLayers = argv.includes('--layers') ? Number(option('layers')) : undefined;
	if (numLayers !== undefined && !(Number.isInteger(numLayers) && numLayers >= 1)) {
		console.error(`--layers needs an integer >= 1\n${usage}`);
		return 2;
	}
	return { mode, root, numLayers, tiny: argv.includes('--tiny'), option };
}

/** run(c), a case's export, for each case in order; a throw becomes {name, error}. Each is
 * logged, `describe` saying a result. */
export async function exportEach<C extends { name: string }, R>(
	cases: readonly C[],
	run: (c: C) => Promise<R>,
	describe: (r: R) => string,
	log: (line: string) => void
): Promise<(R | { name: string; error: string })[]> {
	const out: (R | { name: string; error: string })[] = [];
	for (const c of cases) {
		try {
			const r = await run(c);
			out.push(r);
			log(`export ${c.name}: ${describe(r)}`);
		} catch (error) {
			out.push({ name: c.name, error: errorText(error) });
			log(`export ${c.name}: FAILED ${errorText(error).split('\n')[0]}`);
		}
	}
	return out;
}

/** fn with an acquired GPU (its adapter logged first), destroyed when fn settles. */
export async function withGpu<T>(
	log: (line: string) => void,
	fn: (gpu: Gpu) => Promise<T>
): Promise<T> {
	const gpu = await acquireGpu();
	log(`device: ${gpu.adapter.vendor} ${gpu.adapter.architecture} ${gpu.adapter.description}`);
	try {
		return await fn(gpu);
	} finally {
		gpu.destroy();
	}
}
