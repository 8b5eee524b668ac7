/**
 * The pieces of experiments/learn-tictactoe.ts that run without a GPU:
 * - evaluate(): games against the random opponent through an OpenAI-shaped client whose
 *   "model" is a hand-written policy. Garbage replies make every game an illegal first move
 *   (score -1, ART's penalty with no legal move before it); a policy that takes wins and
 *   blocks losses scores near its exact expectation against this opponent (0.880, computed
 *   by enumerating the opponent's moves: 0.941 as X, 0.819 as O); outcomes add up; the same
 *   seeds give the same games; requests carry the temperature and no sampling seed (a seeded
 *   request would be decoded alone, not batched).
 * - parseLearnArgs: defaults, overrides, refusals with a typed error.
 * - reportMarkdown: one table row per evaluated (phase, step), greedy and T=1 side by side.
 * - writeTicTacToeModel (tiny size): a folder that parses, the parameter count it reports,
 *   embeddings of std 0.02, the final norm at the scale that lets a logit reach LOGIT_BOUND
 *   (at 1 the frozen tied head caps every token near p 0.27), a whole game within the run's
 *   512-token context.
 * - saveState / loadState: the latest checkpoint, the report and the history go to flat
 *   files and back into a new run folder; a folder that holds a run is not overwritten.
 */
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
} from '../../../src/lib/agent/envs/tictactoe/rollout';
import { legalPlayTranscripts } from '../../../src/lib/agent/envs/tictactoe/demonstrations';
import { parseModelConfig } from '../../../src/lib/model/hf/config';
import { decodeToF32, parseSafetensorsHeader } from '../../../src/lib/model/hf/safetensors';
import { Tokenizer } from '../../../src/lib/model/tokenizer/tokenizer';
import { evaluate, type Evaluation } from '../../../experiments/tictactoe/evaluate';
import { LOGIT_BOUND, MODEL_SIZES, writeTicTacToeModel } from '../../../scripts/tictactoe-model';
import { DEFAULTS, parseLearnArgs } from '../../../experiments/tictactoe/options';
import { reportMarkdown } from '../../../experiments/tictactoe/report-md';
import { loadReport, type Report } from '../../../experiments/tictactoe/report';
import { loadState, saveState } from '../../../experiments/tictactoe/state';

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
		expect(parseLearnArgs(['--out', 'x', '--opponents', 'distinct']).opponents).toBe('distinct');
		expect(parseLearnArgs(['--out', 'x', '--lr-end-ratio', '0.1']).lrEndRatio).toBe(0.1);
		expect(
			parseLearnArgs(['--out', 'x', '--grpo-base', 'sft-merged', '--kl-beta', '0.1'])
		).toMatchObject({ grpoBase: 'sft-merged', klBeta: 0.1 });
		// the default KL goes with the default base; over SFT's adapter there is none
		expect(parseLearnArgs(['--out', 'x', '--grpo-base', 'sft-adapter']).klBeta).toBe(0);
		expect(full.loadState).toBeUndefined();
		const carried = parseLearnArgs(['--out', 'x', '--load-state', 'st', '--save-state', 'o/st']);
		expect(carried.loadState?.endsWith('/st')).toBe(true);
		expect(carried.saveState?.endsWith('o/st')).toBe(true);
	});

	it('refuses a missing --out, unknown flags and bad values', () => {
		for (const argv of [
			[],
			['--out', 'x', '--stepz', '3'],
			['--out', 'x', '--steps', 'many'],
			['--out', 'x', '--groups', '0'],
			['--out', 'x', '--size', 'huge'],
			['--out', 'x', '--opponents', 'mixed'],
			['--out', 'x', '--grpo-base', 'merged'],
			// a KL to the LoRA-off model over SFT's adapter would be a KL to the random base
			['--out', 'x', '--grpo-base', 'sft-adapter', '--kl-beta', '0.1'],
			['--out', 'x', '--groups']
		])
			expect(() => parseLearnArgs(argv), argv.join(' ')).toThrow(
				expect.objectContaining({ kind: 'learn-args' })
			);
		expect(() => parseLearnArgs(['--out', 'x', '--opponents', 'mixed'])).toThrow(
			"--opponents must be 'shared' or 'distinct', got 'mixed'."
		);
		expect(parseLearnArgs(['--out', 'x', '--size', 'tiny', '--opponents', 'shared'])).toMatchObject(
			{ size: 'tiny', opponents: 'shared' }
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
		expect(md).toContain('lr 0.0002, T');
		const decaying = reportMarkdown({
			...report,
			options: { ...report.options, lr: 2e-4, lrEndRatio: 0.5, steps: 100 }
		});
		expect(decaying).toContain('lr 0.0002 decaying linearly to 0.0001 at step 100, T');
	});
});

describe('writeTicTacToeModel', () => {
	it('writes a loadable Llama folder whose LM head can be confident, and a game fits its context', async () => {
		const dir = await mkdtemp(join(tmpdir(), 'ttt-model-'));
		try {
			const size = MODEL_SIZES.tiny;
			const { parameters, vocab } = await writeTicTacToeModel(dir, size);
			const raw = JSON.parse(await readFile(join(dir, 'config.json'), 'utf8'));
			const generation = JSON.parse(await readFile(join(dir, 'generation_config.json'), 'utf8'));
			const config = parseModelConfig(raw, generation);
			expect(config.vocabSize).toBe(vocab);
			const bytes = new Uint8Array(await readFile(join(dir, 'model.safetensors')));
			const header = parseSafetensorsHeader(bytes, 'model.safetensors', bytes.length);
			const tensor = (name: string) => {
				const t = header.tensors.get(name)!;
				return decodeToF32(bytes.subarray(t.begin, t.end), 'float32');
			};
			let count = 0;
			for (const t of header.tensors.values()) count += t.shape.reduce((a, b) => a * b, 1);
			expect(count).toBe(parameters);
			// The final norm lifts the largest possible logit to LOGIT_BOUND; the others stay 1.
			const scale = tensor('model.norm.weight');
			expect(scale.every((v) => Math.abs(v - LOGIT_BOUND / (0.02 * size.hidden)) < 1e-4)).toBe(
				true
			);
			expect(tensor('model.layers.0.input_layernorm.weight').every((v) => v === 1)).toBe(true);
			const embed = tensor('model.embed_tokens.weight');
			const rms = Math.sqrt(embed.reduce((s, v) => s + v * v, 0) / embed.length);
			expect(Math.abs(rms - 0.02)).toBeLessThan(0.002);
			// |normed h| * |embedding row| = sqrt(C) * scale * 0.02 * sqrt(C): the bound.
			expect(Math.sqrt(size.hidden) * scale[0] * rms * Math.sqrt(size.hidden)).toBeCloseTo(
				LOGIT_BOUND,
				-1
			);
			// The longest of 500 random games, plus a reply, fits learn-tictactoe's 512 tokens.
			const tok = Tokenizer.fromJson(
				await readFile(join(dir, 'tokenizer.json'), 'utf8'),
				await readFile(join(dir, 'tokenizer_config.json'), 'utf8')
			);
			const longest = Math.max(
				...legalPlayTranscripts(500, 77).map(
					(t) =>
						tok.encode(
							tok.applyChatTemplate(
								t.messages().map((m) => ({ role: m.role, content: String(m.content) })),
								{ addGenerationPrompt: false }
							)
						).length
				)
			);
			expect(longest).toBeGreaterThan(100);
			expect(longest + 16).toBeLessThanOrEqual(512);
			expect(tok.encode('<move>B2</move>').length).toBeLessThanOrEqual(8);
		} finally {
			await rm(dir, { recursive: true, force: true });
		}
	}, 60_000);
});

describe('loadReport', () => {
	it('continues a run only with the options that define it', async () => {
		const root = await mkdtemp(join(tmpdir(), 'ttt-report-'));
		try {
			const path = join(root, 'report.json');
			const o = parseLearnArgs(['--out', root]);
			expect((await loadReport(o, path)).rounds).toBe(0);
			// a report from before --grpo-base trained on over SFT's adapter
			const older: Partial<typeof o> = { ...o };
			delete older.grpoBase;
			await writeFile(path, JSON.stringify({ options: older, rounds: 7 }));
			await expect(loadReport(o, path)).rejects.toThrow(/grpoBase = sft-adapter/);
			const adapter = parseLearnArgs(['--out', root, '--grpo-base', 'sft-adapter', '--lr', '1e-4']);
			const resumed = await loadReport(adapter, path);
			expect(resumed.rounds).toBe(7);
			expect(resumed.options.lr).toBe(1e-4);
			await expect(
				loadReport(
					parseLearnArgs(['--out', root, '--grpo-base', 'sft-adapter', '--rank', '8']),
					path
				)
			).rejects.toThrow(/rank/);
		} finally {
			await rm(root, { recursive: true, force: true });
		}
	});
});

describe('saveState / loadState', () => {
	it('carries the report, history and latest checkpoint to a new folder, and never over a run', async () => {
		const root = await mkdtemp(join(tmpdir(), 'ttt-state-'));
		try {
			const out = join(root, 'out');
			const ck = (step: string) => join(out, 'run', 'checkpoints', step);
			for (const step of ['0003', '0012']) {
				await mkdir(ck(step), { recursive: true });
				await writeFile(join(ck(step), 'adapter_model.safetensors'), `weights ${step}`);
				await writeFile(join(ck(step), 'trainer_state.json'), `{"step": ${Number(step)}}`);
			}
			await writeFile(join(out, 'report.json'), '{"rounds": 12}');
			await writeFile(join(out, 'run', 'history.jsonl'), '{"step": 12}\n');
			const state = join(root, 'state');
			const files = await saveState(out, state);
			expect(files.sort()).toEqual([
				'checkpoint-0012/adapter_model.safetensors',
				'checkpoint-0012/trainer_state.json',
				'history.jsonl',
				'report.json'
			]);
			const again = join(root, 'again');
			expect(await loadState(state, again)).toBe(true);
			const read = (p: string) => readFile(join(again, p), 'utf8');
			expect(await read('report.json')).toBe('{"rounds": 12}');
			expect(await read('run/history.jsonl')).toBe('{"step": 12}\n');
			expect(await read('run/checkpoints/0012/adapter_model.safetensors')).toBe('weights 0012');
			expect(await readdir(join(again, 'run', 'checkpoints'))).toEqual(['0012']);
			// A folder that already holds a run is left alone; so is a missing state.
			await writeFile(join(state, 'report.json'), '{"rounds": 99}');
			expect(await loadState(state, again)).toBe(false);
			expect(await read('report.json')).toBe('{"rounds": 12}');
			expect(await loadState(join(root, 'none'), join(root, 'fresh'))).toBe(false);
		} finally {
			await rm(root, { recursive: true, force: true });
		}
	});

	it('with a merged SFT keeps its adapter, not its checkpoint, and the GRPO run', async () => {
		const root = await mkdtemp(join(tmpdir(), 'ttt-state-'));
		try {
			const out = join(root, 'out');
			const put = async (path: string, text: string) => {
				await mkdir(join(out, path, '..'), { recursive: true });
				await writeFile(join(out, path), text);
			};
			await put('report.json', '{"rounds": 5}');
			await put('run/history.jsonl', 'sft\n');
			await put('run/checkpoints/0256/adapter_model.safetensors', 'sft weights');
			await put('sft-adapter/adapter_model.safetensors', 'sft weights');
			await put('sft-adapter/adapter_config.json', '{}');
			await put('run-grpo/history.jsonl', 'grpo\n');
			await put('run-grpo/checkpoints/0004/adapter_model.safetensors', 'grpo 4');
			await put('run-grpo/checkpoints/0005/adapter_model.safetensors', 'grpo 5');
			const state = join(root, 'state');
			// a state saved earlier into the same folder leaves nothing behind
			await mkdir(join(state, 'grpo-checkpoint-0001'), { recursive: true });
			await writeFile(join(state, 'grpo-checkpoint-0001', 'adapter_model.safetensors'), 'old');
			expect((await saveState(out, state)).sort()).toEqual([
				'grpo-checkpoint-0005/adapter_model.safetensors',
				'grpo-history.jsonl',
				'history.jsonl',
				'report.json',
				'sft-adapter/adapter_config.json',
				'sft-adapter/adapter_model.safetensors'
			]);
			const again = join(root, 'again');
			expect(await loadState(state, again)).toBe(true);
			const read = (p: string) => readFile(join(again, p), 'utf8');
			expect(await read('run-grpo/checkpoints/0005/adapter_model.safetensors')).toBe('grpo 5');
			expect(await read('run-grpo/history.jsonl')).toBe('grpo\n');
			expect(await read('sft-adapter/adapter_model.safetensors')).toBe('sft weights');
			expect(await readdir(join(again, 'run', 'checkpoints'))).toEqual([]);
			expect((await readdir(join(again, 'run-grpo', 'checkpoints'))).sort()).toEqual(['0005']);
		} finally {
			await rm(root, { recursive: true, force: true });
		}
	});
});
