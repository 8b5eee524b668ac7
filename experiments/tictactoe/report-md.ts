/**
 * @file Renders a learn-tictactoe report.json as Markdown for BENCHMARKS.md: the evaluations
 * (greedy and T = 1, overall / as X / as O, illegal moves) at each phase, and the GRPO curve
 * (train reward and illegal moves averaged over the steps between evaluations, seconds per
 * step).
 *
 *   npx tsx experiments/tictactoe/report-md.ts DIR/report.json > table.md
 */
import { readFile } from 'node:fs/promises';
import type { Report } from './report';
import type { Evaluation } from './evaluate';

const f3 = (x: number | undefined) => (x === undefined ? '-' : x.toFixed(3));
const mean = (xs: readonly number[]) => xs.reduce((s, x) => s + x, 0) / Math.max(1, xs.length);

export function reportMarkdown(report: Report): string {
	const o = report.options;
	const lines: string[] = [];
	const endRatio = o.lrEndRatio ?? 1;
	const lrEnd = endRatio === 1 ? '' : ` decaying linearly to ${o.lr * endRatio} at step ${o.steps}`;
	const seconds = report.calls.reduce((s, c) => s + c.seconds, 0);
	lines.push(
		`Model: ${report.model?.parameters ?? '?'} parameters (vocab ${report.model?.vocab ?? '?'}), ` +
			`LoRA r ${o.rank}; SFT ${o.sftGames} transcripts x ${o.sftEpochs} epochs, batch ${o.sftBatch}, ` +
			`lr ${o.sftLr}; GRPO ${o.groups} x ${o.groupSize} games per step, lr ${o.lr}${lrEnd}, T ${o.temperature}, opponents ${o.opponents ?? 'shared'}, ` +
			`on ${o.grpoBase ?? 'sft-adapter'}, KL beta ${o.klBeta ?? 0}; ` +
			`${o.evalGames} evaluation games. ${report.calls.length} call(s), ${seconds.toFixed(0)} s in all` +
			`${report.done ? '' : ' (not finished)'}.`,
		''
	);
	// One row per (phase, GRPO step): greedy and T = 1 side by side.
	const rows = new Map<string, { phase: string; grpoStep: number; byT: Map<number, Evaluation> }>();
	for (const e of report.evaluations) {
		const key = `${e.phase}@${e.grpoStep}`;
		const row = rows.get(key) ?? { phase: e.phase, grpoStep: e.grpoStep, byT: new Map() };
		row.byT.set(e.temperature, e);
		rows.set(key, row);
	}
	lines.push(
		'| phase | GRPO step | greedy score | as X | as O | illegal | T=1 score | as X | as O | illegal |',
		'| ----- | --------: | -----------: | ---: | ---: | ------: | --------: | ---: | ---: | ------: |'
	);
	for (const r of rows.values()) {
		const cells = [0, 1].flatMap((T) => {
			const e = r.byT.get(T);
			return e
				? [f3(e.score), f3(e.asX.score), f3(e.asO.score), `${e.illegal}/${e.games}`]
				: ['-', '-', '-', '-'];
		});
		lines.push(`| ${r.phase} | ${r.grpoStep} | ${cells.join(' | ')} |`);
	}
	if (report.sft.length) {
		const first = report.sft[0];
		const last = report.sft.at(-1)!;
		lines.push(
			'',
			`SFT loss ${f3(first.loss)} (step ${first.step}) -> ${f3(last.loss)} (step ${last.step}).`
		);
	}
	const curve = report.curve.filter((c) => !c.skipped);
	if (curve.length) {
		lines.push(
			'',
			'| GRPO steps | train reward (T=1) | illegal | rollouts s/step | train s/step |',
			'| ---------- | -----------------: | ------: | --------------: | -----------: |'
		);
		for (let i = 0; i < curve.length; i += o.evalEvery) {
			const w = curve.slice(i, i + o.evalEvery);
			lines.push(
				`| ${w[0].grpoStep}-${w.at(-1)!.grpoStep} | ${f3(mean(w.map((c) => c.reward)))} | ` +
					`${(100 * mean(w.map((c) => c.illegal))).toFixed(1)}% | ` +
					`${mean(w.map((c) => c.rolloutS)).toFixed(2)} | ${mean(w.map((c) => c.trainS)).toFixed(2)} |`
			);
		}
	}
	return lines.join('\n') + '\n';
}

if (process.argv[1]?.endsWith('report-md.ts')) {
	const path = process.argv[2];
	if (!path) {
		process.stderr.write('usage: npx tsx experiments/tictactoe/report-md.ts DIR/report.json\n');
		process.exit(2);
	}
	process.stdout.write(reportMarkdown(JSON.parse(await readFile(path, 'utf8')) as Report));
}
