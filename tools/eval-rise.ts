/**
 * @file How soon a run's evaluation score rises, from a `cli train` run's history.jsonl: the
 * first evaluation after step 0 whose val/reward beats step 0's by --margin AND lies above
 * step 0's 95% interval (Wilson's over --games games: util/interval.ts), with seconds since
 * --started (tools/device/env-learning.sh writes it as RUN.started); --metric names another
 * evaluation field (2048: val/win, the win rate at 128). A rise of exactly the margin counts
 * (30 of 200 games is 0.15, whatever the floats' last bit). One JSON line: step 0's value and
 * interval, the rise (null without one) and every evaluation with its interval.
 *
 *   npx tsx tools/eval-rise.ts --history OUT/history.jsonl --started ISO [--margin 0.03]
 *     [--metric val/reward] [--games 200]
 */
import { readFile } from 'node:fs/promises';
import { wilsonInterval } from '../src/lib/util/interval';

interface Line {
	step: number;
	recorded_at: string;
	[metric: string]: unknown;
}

/** Below float noise, far below one game of 200 (0.005). */
const EPSILON = 1e-9;

function flag(argv: string[], name: string): string | undefined {
	const i = argv.indexOf(`--${name}`);
	return i >= 0 ? argv[i + 1] : undefined;
}

async function main(): Promise<void> {
	const argv = process.argv.slice(2);
	const history = flag(argv, 'history');
	const started = Date.parse(flag(argv, 'started') ?? '');
	const margin = Number(flag(argv, 'margin') ?? 0.03);
	const metric = flag(argv, 'metric') ?? 'val/reward';
	const games = Number(flag(argv, 'games') ?? 200);
	if (
		!history ||
		Number.isNaN(started) ||
		!(margin >= 0) ||
		!(Number.isInteger(games) && games > 0)
	)
		throw new Error(
			'usage: eval-rise.ts --history FILE --started ISO [--margin X >= 0] [--metric val/NAME] [--games N]'
		);
	const lines = (await readFile(history, 'utf8'))
		.split('\n')
		.filter((l) => l.trim())
		.map((l) => JSON.parse(l) as Line);
	const evals = lines
		.filter((l) => typeof l[metric] === 'number')
		.map((l) => ({
			step: l.step,
			seconds: Math.round((Date.parse(l.recorded_at) - started) / 100) / 10,
			[metric]: l[metric] as number,
			interval: wilsonInterval(l[metric] as number, games).map((x) => Math.round(x * 1e4) / 1e4)
		}));
	const first = evals.find((e) => e.step === 0);
	if (!first) throw new Error(`${history} has no evaluation at step 0`);
	const above = wilsonInterval(first[metric] as number, games)[1];
	const rise =
		evals.find(
			(e) =>
				e.step > 0 &&
				(e[metric] as number) >= (first[metric] as number) + margin - EPSILON &&
				(e[metric] as number) > above
		) ?? null;
	process.stdout.write(
		JSON.stringify({
			metric,
			margin,
			games,
			step0: first[metric],
			interval0: first.interval,
			rise,
			evals
		}) + '\n'
	);
}

main().catch((error) => {
	process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
	process.exit(1);
});
