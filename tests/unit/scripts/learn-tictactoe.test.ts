/**
 * The pieces of scripts/learn-tictactoe.ts that run without a GPU:
 * - evaluate(): games against the random opponent through an OpenAI-shaped client whose
 *   "model" is a hand-written policy. Garbage replies make every game an illegal first move
 *   (score -1, ART's penalty with no legal move before it); a policy that takes wins and
 *   blocks losses scores near its exact expectation against this opponent (0.880, computed
 *   by enumerating the opponent's moves: 0.941 as X, 0.819 as O); outcomes add up; the same
 *   seeds give the same games; requests carry the temperature and no sampling seed (a seeded
 *   request would be decoded alone, not batched).
 * - parseLearnArgs: defaults, overrides, refusals with a typed error.
 * - reportMarkdown: one table row per evaluated (phase, step), greedy and T=1 side by side.
 */
import type OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import {
	legalMoves,
	otherMark,
	play,
	squareName,
	winner,
	type Board,
	type Cell,
	type Mark
} from '../../../src/lib/agent/tictactoe';
import { evaluate, type Evaluation } from '../../../scripts/tictactoe/evaluate';
import { DEFAULTS, parseLearnArgs } from '../../../scripts/tictactoe/options';
import { reportMarkdown } from '../../../scripts/tictactoe/report-md';
import type { Report } from '../../../scripts/tictactoe/report';

type Policy = (board: Board, mark: Mark) => string;

/** Cells of the last board in a user message (rows 'A  x | _ | o'). */
function boardOf(text: string): Cell[] {
	return text
		.split('\n')
		.filter((l) => /^[A-C] {2}/.test(l))
		.slice(-3)
		.flatMap((r) => [r[3], r[7], r[11]] as Cell[]);
}

function policyClient(policy: Policy, requests: Record<string, unknown>[]): OpenAI {
	const create = async (body: {
		messages: { role: string; content: string }[];
		[k: string]: unknown;
	}) => {
		requests.push(body);
		const mark = /as ([xo])/.exec(body.messages[0].content)![1] as Mark;
		const content = policy(boardOf(body.messages.at(-1)!.content), mark);
		return {
			id: 'x',
			object: 'chat.completion',
			created: 0,
			model: 'policy',
			choices: [
				{
					index: 0,
					finish_reason: 'stop',
					logprobs: null,
					message: { role: 'assistant', content, refusal: null }
				}
			]
		};
	};
	return { chat: { completions: { create } } } as unknown as OpenAI;
}

const winning = (b: Board, m: Mark) => legalMoves(b).filter((i) => winner(play(b, i, m)) === m);
const winBlock: Policy = (b, me) => {
	const moves = winning(b, me).length
		? winning(b, me)
		: winning(b, otherMark(me)).length
			? winning(b, otherMark(me))
			: legalMoves(b);
	return `<move>${squareName(moves[0])}</move>`;
};

describe('evaluate', () => {
	it('scores garbage replies as illegal first moves', async () => {
		const requests: Record<string, unknown>[] = [];
		const e = await evaluate(
			policyClient(() => 'B2 please', requests),
			'm',
			{
				games: 20,
				temperature: 1,
				maxTokens: 16
			}
		);
		expect(e.illegal).toBe(20);
		expect(e.wins + e.draws + e.losses).toBe(0);
		expect(e.score).toBeCloseTo(-1, 12);
		expect(e.asX.games + e.asO.games).toBe(20);
		expect(e.asX.games).toBeGreaterThan(0);
		expect(e.asO.games).toBeGreaterThan(0);
		expect(requests).toHaveLength(20);
		for (const r of requests) {
			expect(r.temperature).toBe(1);
			expect(r).not.toHaveProperty('seed');
			expect(r.max_completion_tokens).toBe(16);
		}
	});

	it('scores a win-and-block policy near its expectation, the same games every time', async () => {
		const requests: Record<string, unknown>[] = [];
		const o = { games: 200, temperature: 0, maxTokens: 16 };
		const e = await evaluate(policyClient(winBlock, requests), 'm', o);
		expect(e.illegal).toBe(0);
		expect(e.wins + e.draws + e.losses).toBe(200);
		expect(e.score).toBeCloseTo((e.wins + 0.5 * e.draws) / 200, 12);
		// 200 games: the mean's standard error is ~0.02; these seeds are fixed.
		expect(Math.abs(e.score - 0.88)).toBeLessThan(0.06);
		expect(e.asX.score).toBeGreaterThan(e.asO.score);
		const again = await evaluate(policyClient(winBlock, []), 'm', o);
		const pick = (x: typeof e) => [x.score, x.wins, x.draws, x.losses, x.asX, x.asO];
		expect(pick(again)).toEqual(pick(e));
		expect(requests.every((r) => r.temperature === 0 && !('seed' in r))).toBe(true);
	});
});

describe('parseLearnArgs', () => {
	it('takes the defaults, the tiny ones with --tiny, and overrides', () => {
		const full = parseLearnArgs(['--out', 'runs/a']);
		expect(full).toMatchObject({ ...DEFAULTS.full, tiny: false });
		expect(full.out.endsWith('runs/a')).toBe(true);
		const tiny = parseLearnArgs(['--tiny', '--out', 'x', '--steps', '7', '--lr', '2e-4']);
		expect(tiny).toMatchObject({ ...DEFAULTS.tiny, tiny: true, steps: 7, lr: 2e-4 });
	});

	it('refuses a missing --out, unknown flags and bad values', () => {
		for (const argv of [
			[],
			['--out', 'x', '--stepz', '3'],
			['--out', 'x', '--steps', 'many'],
			['--out', 'x', '--groups', '0'],
			['--out', 'x', '--groups']
		])
			expect(() => parseLearnArgs(argv), argv.join(' ')).toThrow(
				expect.objectContaining({ kind: 'learn-args' })
			);
	});
});

describe('reportMarkdown', () => {
	it('puts greedy and T=1 of each evaluated step on one row', () => {
		const ev = (phase: string, grpoStep: number, temperature: number, score: number) =>
			({
				phase,
				grpoStep,
				step: grpoStep,
				temperature,
				games: 10,
				score,
				wins: 0,
				draws: 0,
				losses: 0,
				illegal: temperature,
				errors: 0,
				asX: { games: 5, score: score + 0.1 },
				asO: { games: 5, score: score - 0.1 },
				seconds: 1
			}) satisfies Evaluation;
		const report: Report = {
			options: parseLearnArgs(['--out', 'x', '--eval-every', '2']),
			sftEnd: 4,
			sft: [{ step: 1, loss: 2, lr: 1e-3 }],
			curve: [1, 2, 3].map((s) => ({
				grpoStep: s,
				reward: s / 10,
				illegal: 0,
				loss: 0,
				skipped: null,
				rolloutS: 1,
				trainS: 1
			})),
			evaluations: [ev('sft', 0, 0, 0.5), ev('sft', 0, 1, 0.4), ev('grpo', 2, 0, 0.75)],
			rounds: 3,
			calls: [{ startedAt: '', seconds: 10, stoppedBy: 'done' }],
			done: false
		};
		const md = reportMarkdown(report);
		expect(md).toContain(
			'| sft | 0 | 0.500 | 0.600 | 0.400 | 0/10 | 0.400 | 0.500 | 0.300 | 1/10 |'
		);
		expect(md).toContain('| grpo | 2 | 0.750 | 0.850 | 0.650 | 0/10 | - | - | - | - |');
		expect(md).toContain('| 1-2 | 0.150 |');
		expect(md).toContain('| 3-3 | 0.300 |');
		expect(md).toContain('not finished');
	});
});
