/**
 * The tic-tac-toe rollout through the openai package and the REAL ChatService: on the real
 * engine (tiny random Llama) the first move is garbage, ending with ART's illegal-move
 * reward, its trajectory, token data and training sequence checked; with a scripted engine
 * replying chosen moves, whole games, rewards matching the final board, multi-turn chaining
 * into one sequence, and an illegal move mid-game.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatherTrajectoryGroups } from '../../../../src/lib/agent/gather';
import { openaiClient } from '../../../../src/lib/serve/client';
import type { ChatEngine, EngineOptions, EngineSequence } from '../../../../src/lib/serve/engine';
import { ChatService } from '../../../../src/lib/serve/service';
import {
	REWARD,
	emptyBoard,
	illegalMoveReward,
	legalMoves,
	parseMove,
	play,
	renderBoard,
	rollout,
	squareName,
	systemPrompt,
	winner,
	type Outcome,
	type Board,
	type Cell,
	type Mark
} from '../../../../src/lib/agent/envs/tictactoe/rollout';
import { trajectoryToSequences } from '../../../../src/lib/agent/to-train';
import { isChoice, type Choice, type Trajectory } from '../../../../src/lib/agent/trajectory';
import type { ChatMessage } from '../../../../src/lib/model/tokenizer/chat-messages';
import { tinyTokenizer } from '../../../../src/lib/testing/tiny-tokenizer';
import { Tokenizer } from '../../../../src/lib/model/tokenizer/tokenizer';
import { useGpu } from '../../../helpers/gpu';
import { MODEL_NAME, tinyChat, type TinyChat } from '../../serve/openai-setup';

const HEADER = '   1   2   3\n';

/** The board of ART's rendering back into cells (the last one in `text`). */
function parseBoard(text: string): Cell[] {
	const at = text.lastIndexOf(HEADER);
	const rows = text
		.slice(at + HEADER.length)
		.split('\n')
		.slice(0, 3);
	return rows.flatMap((row) => [row[3], row[7], row[11]] as Cell[]);
}

type Policy = (board: Cell[], mark: Mark, turn: number) => string;

/**
 * A ChatEngine whose "model" is a policy: it reads the board and the agent's mark from the
 * prompt's text and emits the tokens of the policy's reply and the end token, step by step
 * through onStep as the real engine does, with logprob -0.01 * (step + 1).
 */
function scriptedEngine(tok: Tokenizer, end: number, policy: Policy): ChatEngine {
	return {
		async generate(prompts, options: EngineOptions): Promise<EngineSequence[]> {
			const planned = prompts.map((p) => {
				const text = tok.decode(p);
				const mark = /You play tic-tac-toe as ([xo])/.exec(text)![1] as Mark;
				const turn = text.split(HEADER).length - 1;
				return [...tok.encode(policy(parseBoard(text), mark, turn)), end];
			});
			const ids = planned.map(() => [] as number[]);
			const done = new Set<number>();
			for (let step = 0; done.size < prompts.length; step++) {
				const tokens = [];
				for (let i = 0; i < prompts.length; i++) {
					if (done.has(i)) continue;
					if (step >= options.maxTokens || step >= planned[i].length) {
						done.add(i);
						continue;
					}
					ids[i].push(planned[i][step]);
					tokens.push({ index: i, id: planned[i][step], logprob: -0.01 * (step + 1) });
					if (step === planned[i].length - 1) done.add(i);
				}
				if (!tokens.length) break;
				for (const k of options.onStep?.(tokens) ?? []) done.add(k);
			}
			return prompts.map((p, i) => ({
				promptIds: [...p],
				ids: ids[i],
				logprobs: ids[i].map((_, k) => -0.01 * (k + 1)),
				finishReason: ids[i].at(-1) === end ? 'stop' : 'length'
			}));
		}
	};
}

const firstLegal: Policy = (board) => `<move>${squareName(legalMoves(board)[0])}</move>`;

function scriptedClient(policy: Policy) {
	const files = tinyTokenizer();
	const tok = Tokenizer.fromJson(
		files.tokenizerJson,
		files.tokenizerConfigJson,
		files.chatTemplate
	);
	const service = new ChatService({
		engine: scriptedEngine(tok, files.ids.imEnd, policy),
		tokenizer: tok,
		model: 'scripted',
		contextLength: 4096,
		scheduler: { stopTokenIds: [files.ids.imEnd] }
	});
	return { client: openaiClient({ service }), tok };
}

/**
 * The trajectory as turns: the board the agent saw and the choice it made. The last item is
 * the game-over message (the final board and the outcome), answered by nobody.
 */
function turns(t: Trajectory): { board: Cell[]; choice: Choice }[] {
	const items = t.messagesAndChoices;
	expect(items[0]).toEqual({
		role: 'system',
		content: systemPrompt(t.metadata.agent_symbol as Mark)
	});
	const last = items.length - 1;
	const final = (t.metadata.final_board as string).split('') as Cell[];
	const outcome = t.metadata.outcome as Outcome;
	const closing = items[last];
	expect(isChoice(closing)).toBe(false);
	if (!isChoice(closing)) {
		expect(closing.role).toBe('user');
		if (outcome === 'illegal')
			expect(closing.content).toMatch(
				/^ {3}1 .*\n(.*\n){3}That move is not allowed: .+\.\nGame over: you lose by an illegal move\.$/
			);
		else
			expect(closing.content).toBe(
				renderBoard(final) +
					{ win: 'Game over: you win.', loss: 'Game over: you lose.', draw: 'Game over: a draw.' }[
						outcome
					]
			);
		expect(String(closing.content).startsWith(renderBoard(final))).toBe(true);
	}
	const out: { board: Cell[]; choice: Choice }[] = [];
	for (let k = 1; k < last; k += 2) {
		const u = items[k];
		const c = items[k + 1];
		expect(isChoice(u)).toBe(false);
		expect(isChoice(c)).toBe(true);
		if (isChoice(u) || !isChoice(c)) throw new Error('unreachable');
		expect(u.role).toBe('user');
		const board = parseBoard(u.content as string);
		expect(u.content).toBe(renderBoard(board));
		out.push({ board, choice: c });
	}
	return out;
}

describe('tic-tac-toe rollout, scripted player through the real ChatService', () => {
	it('plays whole games: boards follow each other, rewards match the final board', async () => {
		const { client, tok } = scriptedClient(firstLegal);
		const outcomes = new Set<string>();
		const marks = new Set<string>();
		for (let seed = 0; seed < 24; seed++) {
			const t = await rollout(client, { model: 'scripted', seed });
			const agent = t.metadata.agent_symbol as Mark;
			const opponent: Mark = agent === 'x' ? 'o' : 'x';
			marks.add(agent);
			const played = turns(t);
			// 'x' moves first: as 'o' the agent sees the opponent's first move.
			const first = played[0].board;
			expect(first.filter((c) => c === opponent)).toHaveLength(agent === 'o' ? 1 : 0);
			expect(first.filter((c) => c === agent)).toHaveLength(0);
			let board: Board = first;
			played.forEach(({ board: seen, choice }, k) => {
				if (k > 0) {
					// The last board plus exactly one opponent mark on an empty square.
					const diff = seen.flatMap((c, i) => (c !== board[i] ? [i] : []));
					expect(diff).toHaveLength(1);
					expect(board[diff[0]]).toBe('_');
					expect(seen[diff[0]]).toBe(opponent);
				}
				const move = parseMove(choice.message.content!);
				if (!move.ok) throw new Error('scripted move did not parse');
				board = play(seen, move.index, agent);
				// The prompt the engine read is the chat so far through the template.
				const before = t.messages().slice(0, 2 + 2 * k) as ChatMessage[];
				expect(choice.tabrl!.prompt_ids).toEqual(
					tok.encodeChat(before, { addGenerationPrompt: true })
				);
			});
			const final = (t.metadata.final_board as string).split('') as Cell[];
			const w = winner(final);
			expect(w).not.toBeNull();
			const outcome = w === 'draw' ? 'draw' : w === agent ? 'win' : 'loss';
			outcomes.add(outcome);
			expect(t.metadata.outcome).toBe(outcome);
			expect(t.reward).toBe(REWARD[outcome]);
			expect(t.metrics).toEqual({ win: t.reward, num_moves: played.length, invalid_move: 0 });
			// The final board is the last one plus the agent's move, and, when the game did
			// not end on that move, one opponent mark (a loss always; a draw may).
			const extra = final.flatMap((c, i) => (c !== board[i] ? [i] : []));
			expect(extra).toHaveLength(outcome === 'win' ? 0 : outcome === 'loss' ? 1 : extra.length);
			expect(extra.length).toBeLessThanOrEqual(1);
			for (const i of extra) expect([board[i], final[i]]).toEqual(['_', opponent]);
			expect(t.logs.filter((l) => l.startsWith('agent'))).toHaveLength(played.length);
			// The turns chain into one training sequence, every reply trained once.
			const seqs = trajectoryToSequences(t, { advantage: 1 });
			expect(seqs).toHaveLength(1);
			const last = played.at(-1)!.choice.tabrl!;
			expect(seqs[0].ids).toEqual([...last.prompt_ids, ...last.ids]);
			expect(seqs[0].ids.filter((_, k) => seqs[0].trainMask[k])).toEqual(
				played.flatMap((p) => p.choice.tabrl!.ids)
			);
		}
		expect(marks).toEqual(new Set(['x', 'o']));
		// Over these seeds first-legal-square meets every outcome against a random opponent.
		expect(outcomes).toEqual(new Set(['win', 'loss', 'draw']));
	});

	it('the same seed gives the same game', async () => {
		const { client } = scriptedClient(firstLegal);
		const a = await rollout(client, { model: 'scripted', seed: 7 });
		const b = await rollout(client, { model: 'scripted', seed: 7 });
		expect(b.messages()).toEqual(a.messages());
		expect(b.logs).toEqual(a.logs);
	});

	it("mark fixes the agent's mark; the opponent still draws from the seed", async () => {
		const { client } = scriptedClient(firstLegal);
		const marks = new Set<string>();
		for (const mark of ['x', 'o'] as const)
			for (let seed = 0; seed < 6; seed++) {
				const t = await rollout(client, { model: 'scripted', seed, mark });
				expect(t.metadata.agent_symbol).toBe(mark);
				expect(t.messages()[0].content).toContain(`as ${mark} `);
				const free = await rollout(client, { model: 'scripted', seed });
				marks.add(free.metadata.agent_symbol as string);
				// Where the seed draws the same mark, the forced game is the same game.
				if (free.metadata.agent_symbol === mark) expect(t.logs).toEqual(free.logs);
			}
		expect(marks).toEqual(new Set(['x', 'o']));
	});

	it('an illegal move mid-game ends it with -1 + ln(n + 1) / ln(100)', async () => {
		// Second move: a taken square.
		const { client } = scriptedClient((board, mark, turn) =>
			turn === 2
				? `<move>${squareName(board.findIndex((c) => c !== '_'))}</move>`
				: firstLegal(board, mark, turn)
		);
		for (const seed of [0, 1, 2, 3]) {
			const t = await rollout(client, { model: 'scripted', seed });
			expect(turns(t)).toHaveLength(2);
			expect(t.reward).toBeCloseTo(illegalMoveReward(1), 15);
			expect(t.metrics).toEqual({ num_moves: 1, invalid_move: 1 });
			expect(t.metadata.outcome).toBe('illegal');
			expect(t.logs.at(-1)).toMatch(/^illegal move \(occupied: [A-C][1-3] is taken\)/);
			expect(t.messages().at(-1)?.content).toMatch(
				/That move is not allowed: [A-C][1-3] is taken\.\nGame over: you lose by an illegal move\.$/
			);
		}
	});

	it("onInvalidReply 'random-move': a garbage reply becomes a random legal move, the game goes on", async () => {
		// every reply garbage: the agent's moves are all replacements, played to the board's end
		const { client } = scriptedClient(() => 'garbage');
		for (const seed of [0, 1, 2, 3, 4, 5]) {
			const t = await rollout(client, { model: 'scripted', seed, onInvalidReply: 'random-move' });
			const moves = Number(t.metrics.num_moves);
			expect(moves).toBeGreaterThanOrEqual(2); // as O a game can be lost after two
			expect(t.metrics.replaced_moves).toBe(moves);
			expect(t.metrics.invalid_move).toBe(0);
			expect(turns(t)).toHaveLength(moves);
			const board = (t.metadata.final_board as string).split('') as Cell[];
			expect(winner(board)).not.toBeNull();
			const outcome = t.metadata.outcome as Outcome;
			expect(outcome).not.toBe('illegal');
			expect(t.reward).toBe(REWARD[outcome as Exclude<Outcome, 'illegal'>]);
			const agent = t.metadata.agent_symbol as Mark;
			expect(board.filter((c) => c === agent)).toHaveLength(moves);
			expect(
				t.logs.filter((l) => /^invalid reply \(no-move\) replaced by [A-C][1-3]$/.test(l))
			).toHaveLength(moves);
		}
		// the same seed, the same game; without the rule the same reply ends it at once
		const a = await rollout(client, { model: 'scripted', seed: 7, onInvalidReply: 'random-move' });
		const b = await rollout(client, { model: 'scripted', seed: 7, onInvalidReply: 'random-move' });
		expect(b.metadata.final_board).toBe(a.metadata.final_board);
		const ended = await rollout(client, { model: 'scripted', seed: 7 });
		expect(ended.metadata.outcome).toBe('illegal');
		expect(ended.metrics.replaced_moves).toBeUndefined();
	});

	it('strict: false accepts a move after thinking text; strict (default) does not', async () => {
		const { client } = scriptedClient(
			(board, mark, turn) => `Let me think. ${firstLegal(board, mark, turn)}`
		);
		const strict = await rollout(client, { model: 'scripted', seed: 1 });
		expect(strict.reward).toBe(-1);
		expect(strict.logs.at(-1)).toMatch(/^illegal move \(no-move/);
		const loose = await rollout(client, { model: 'scripted', seed: 1, strict: false });
		expect(loose.metrics.invalid_move).toBe(0);
		expect(loose.reward).toBeGreaterThanOrEqual(0);
	});
});

describe('tic-tac-toe rollout on the real engine (tiny random Llama)', () => {
	const gpu = useGpu();
	let chat: TinyChat;
	let client: OpenAI;

	beforeAll(async () => {
		chat = await tinyChat(gpu());
		client = openaiClient({ service: chat.service });
	});
	afterAll(() => chat?.release());

	it('a garbage reply is an illegal move: the game ends at once with reward -1', async () => {
		const [group] = await gatherTrajectoryGroups([
			[0, 1].map(
				(seed) => () =>
					rollout(client, {
						model: MODEL_NAME,
						seed,
						maxTokens: 6,
						request: { temperature: 1, seed: 100 + seed }
					})
			)
		]);
		expect(group.exceptions).toEqual([]);
		expect(group.trajectories.map((t) => t.metadata.agent_symbol).sort()).toEqual(['o', 'x']);
		for (const t of group) {
			const [{ board, choice }, ...more] = turns(t);
			expect(more).toEqual([]);
			// As 'o' the opponent ('x') has played first.
			const agent = t.metadata.agent_symbol as Mark;
			expect(board.filter((c) => c === 'x')).toHaveLength(agent === 'o' ? 1 : 0);
			expect(board.filter((c) => c === 'o')).toHaveLength(0);
			expect(emptyBoard().length - legalMoves(board).length).toBe(agent === 'o' ? 1 : 0);

			// The reply is garbage (random weights), so it does not parse.
			const reply = choice.message.content ?? '';
			expect(parseMove(reply).ok).toBe(false);
			expect(t.reward).toBe(-1);
			expect(t.metrics).toEqual({
				num_moves: 0,
				invalid_move: 1,
				completion_tokens: choice.tabrl!.ids.length
			});
			expect(t.metadata.outcome).toBe('illegal');

			// The choice's token data: the prompt as the engine read it, what it sampled.
			const prompt = chat.tokenizer.encodeChat(t.messages().slice(0, 2) as ChatMessage[], {
				addGenerationPrompt: true
			});
			const tabrl = choice.tabrl!;
			expect(tabrl.prompt_ids).toEqual(prompt);
			expect(tabrl.ids.length).toBeGreaterThan(0);
			expect(tabrl.ids.length).toBeLessThanOrEqual(6);
			expect(tabrl.logprobs).toHaveLength(tabrl.ids.length);
			expect(tabrl.logprobs.every((v) => Number.isFinite(v) && v <= 0)).toBe(true);
			expect(reply).toBe(chat.tokenizer.decode(tabrl.ids, { skipSpecialTokens: true }));

			// One training sequence: the prompt as context, the reply trained.
			const [seq, ...rest] = trajectoryToSequences(t, { advantage: 0.5 });
			expect(rest).toEqual([]);
			expect(seq.ids).toEqual([...tabrl.prompt_ids, ...tabrl.ids]);
			expect(Array.from(seq.trainMask)).toEqual([
				...prompt.map(() => 0),
				...tabrl.ids.map(() => 1)
			]);
			expect(Array.from(seq.rolloutLogprobs.slice(prompt.length))).toEqual(
				Array.from(Float32Array.from(tabrl.logprobs))
			);
		}
	});
});
