/**
 * The 2048 rollout (src/lib/agent/envs/game2048/rollout.ts) with scripted players in place of a
 * model (a recording client around policy-client.ts's policyCompletion): whole games
 * replayed move by move against the rules, spawns after no-op moves, every kind of bad
 * reply, wins and full boards, ART's reward, the history window's requests and recorded
 * histories, the request seeds; then the policies, demonstrations and the replay.
 */
import type OpenAI from 'openai';
import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import { describe, expect, it } from 'vitest';
import {
	applyMove,
	demonstrationConversations,
	demonstrations,
	expertMove,
	expertPolicy,
	finished,
	maxValue,
	newBoard,
	orderPolicy,
	parseBoard,
	randomPolicy,
	renderBoard,
	replay,
	reward,
	rollout,
	spawn,
	SYSTEM_PROMPT,
	type Direction
} from '../../../../src/lib/agent/envs/game2048';
import {
	policyClient,
	policyCompletion,
	type Policy
} from '../../../../src/lib/agent/policy-client';
import { isChoice, type Message } from '../../../../src/lib/agent/trajectory';
import { Rng } from '../../../../src/lib/util/random';

/** A client answering with `policy` that records every request body. */
function recording(policy: Policy): {
	client: OpenAI;
	bodies: ChatCompletionCreateParamsNonStreaming[];
} {
	const bodies: ChatCompletionCreateParamsNonStreaming[] = [];
	const create = async (body: ChatCompletionCreateParamsNonStreaming) => {
		bodies.push(structuredClone(body));
		return policyCompletion(policy({ messages: body.messages }), body.model, bodies.length - 1);
	};
	return { client: { chat: { completions: { create } } } as unknown as OpenAI, bodies };
}

/**
 * Replies with the given texts in turn, then the last one; throws after 2000 turns (a game
 * that never ends, were spawns to stop, fails instead of hanging).
 */
function script(...replies: string[]): Policy {
	let i = 0;
	return () => {
		if (i >= 2000) throw new Error('2000 turns: the game does not end');
		return { content: replies[Math.min(i++, replies.length - 1)] };
	};
}

const always = (d: Direction): Policy => script(`<move>${d}</move>`);

/** The board of each request (its last user message). */
function boardsSent(bodies: ChatCompletionCreateParamsNonStreaming[]): number[][] {
	return bodies.map((b) => parseBoard(b.messages[b.messages.length - 1].content as string)!);
}

const S: Message = { role: 'system', content: SYSTEM_PROMPT };
const user = (board: readonly number[]): Message => ({ role: 'user', content: renderBoard(board) });
const said = (d: Direction): Message => ({ role: 'assistant', content: `<move>${d}</move>` });

describe('2048 rollout: whole games', () => {
	it("ART's system prompt, word for word", () => {
		expect(SYSTEM_PROMPT).toBe(
			'You are an excellent 2048 player. Always choose the move most likely to lead to ' +
				'combine cells to eventually reach the number 2048. Optional moves are ' +
				"'left', 'right', 'up', 'down'. Return your move as an XML object with a single " +
				"property 'move', like so: <move>left</move>"
		);
	});

	it('each board is the last one moved, plus one spawn from the seed; the end is scored', async () => {
		for (const seed of [1, 2, 3]) {
			const { client, bodies } = recording(expertPolicy());
			const t = await rollout(client, { model: 'm', seed, winningValue: 64 });
			// The whole game again from the rules and the same generator.
			const rng = new Rng(seed);
			let board = newBoard(rng);
			const sent = boardsSent(bodies);
			for (let turn = 0; turn < sent.length; turn++) {
				expect(sent[turn]).toEqual(board);
				board = spawn(applyMove(board, expertMove(board)).board, rng);
				expect(finished(board, 64)).toBe(turn === sent.length - 1);
			}
			expect(JSON.parse(t.metadata.final_board as string)).toEqual(board);
			const won = maxValue(board) >= 64;
			expect(t.metadata.outcome).toBe(won ? 'win' : 'full');
			expect(t.reward).toBe(reward(board, 64, won));
			expect(t.metrics).toEqual({
				max_value: maxValue(board),
				board_value: board.reduce((a, b) => a + b, 0),
				num_moves: sent.length,
				win: won ? 1 : 0,
				history_turns: -1
			});
			expect(t.metadata).toMatchObject({
				environment: '2048',
				seed,
				winning_value: 64,
				history_turns: -1
			});
			expect(t.logs[0]).toMatch(/^move 1: (down|left|right|up)$/);
			expect(t.logs).toHaveLength(sent.length + 1);
			expect(bodies.every((b) => b.max_completion_tokens === 128 && b.model === 'm')).toBe(true);
		}
	});

	it('seed 3 at W = 16: the expert wins in 12 moves (a fixed game)', async () => {
		const t = await rollout(policyClient(expertPolicy()), {
			model: 'm',
			seed: 3,
			winningValue: 16
		});
		expect(t.reward).toBe(2);
		expect(t.metrics).toEqual({
			max_value: 16,
			board_value: 28,
			num_moves: 12,
			win: 1,
			history_turns: -1
		});
		expect(t.metadata.outcome).toBe('win');
		expect(t.metadata.final_board).toBe('[0,0,0,0,2,0,0,0,4,2,0,0,16,2,0,2]');
		expect(t.logs.slice(-2)).toEqual(['move 12: left', 'won: 16 reached in 12 moves']);
	});

	it('a move limit stops the game as it stands, scored as a loss; a win on the last move counts', async () => {
		// the fixed game above: the expert wins at move 12
		const opts = { model: 'm', seed: 3, winningValue: 16 };
		const cut = await rollout(policyClient(expertPolicy()), { ...opts, maxMoves: 8 });
		const final: number[] = JSON.parse(cut.metadata.final_board as string);
		expect(cut.metadata.outcome).toBe('limit');
		expect(cut.metrics.num_moves).toBe(8);
		expect(cut.metrics.win).toBe(0);
		expect(maxValue(final)).toBeLessThan(16);
		expect(cut.reward).toBeCloseTo(reward(final, 16, false), 12);
		expect(cut.logs.at(-1)).toBe(`stopped at the move limit (8 moves), max ${maxValue(final)}`);
		expect(cut.metadata.max_moves).toBe(8);
		const last = await rollout(policyClient(expertPolicy()), { ...opts, maxMoves: 12 });
		expect([last.metadata.outcome, last.reward]).toEqual(['win', 2]);
		expect(replay(cut).at(-1)).toMatchObject({
			kind: 'outcome',
			text: `stopped at the move limit (8 moves), max ${maxValue(final)}`
		});
		await expect(rollout(policyClient(expertPolicy()), { ...opts, maxMoves: 0 })).rejects.toThrow(
			RangeError
		);
	});

	it('a move that changes nothing still spawns a tile', async () => {
		const { client, bodies } = recording(always('left'));
		const t = await rollout(client, { model: 'm', seed: 5 });
		const sent = boardsSent(bodies);
		const noop = sent.findIndex((b) => !applyMove(b, 'left').changed);
		expect(noop).toBeGreaterThanOrEqual(1);
		expect(t.logs[noop]).toBe(`move ${noop + 1}: left (no change)`);
		const before = sent[noop];
		const after =
			noop + 1 < sent.length ? sent[noop + 1] : JSON.parse(t.metadata.final_board as string);
		const diff = after
			.map((v: number, i: number) => [i, v])
			.filter(([i, v]: number[]) => v !== before[i]);
		expect(diff).toHaveLength(1);
		expect(before[diff[0][0]]).toBe(0);
		expect([2, 4]).toContain(diff[0][1]);
	});

	it('a full board ends the game even when a merge is still possible', async () => {
		let found = false;
		for (let seed = 0; seed < 40 && !found; seed++) {
			const t = await rollout(policyClient(always('up')), { model: 'm', seed, historyTurns: 0 });
			const final: number[] = JSON.parse(t.metadata.final_board as string);
			expect(t.metadata.outcome).toBe('full');
			expect(final).not.toContain(0);
			expect(t.reward).toBeCloseTo(reward(final, 128, false), 12);
			expect(t.metrics.win).toBe(0);
			if ((['left', 'right', 'up', 'down'] as const).some((d) => applyMove(final, d).changed))
				found = true;
		}
		expect(found).toBe(true);
	});

	it('the same seed gives the same game; the model samples with seed + turn', async () => {
		const a = recording(randomPolicy(9));
		const b = recording(randomPolicy(9));
		const ta = await rollout(a.client, {
			model: 'm',
			seed: 4,
			request: { seed: 100, temperature: 1 }
		});
		const tb = await rollout(b.client, { model: 'm', seed: 4 });
		expect(boardsSent(a.bodies)).toEqual(boardsSent(b.bodies));
		expect(ta.metadata.final_board).toBe(tb.metadata.final_board);
		expect(a.bodies.map((x) => x.seed)).toEqual(a.bodies.map((_, t) => 100 + t));
		expect(a.bodies.every((x) => x.temperature === 1)).toBe(true);
		expect(b.bodies.every((x) => x.seed === undefined)).toBe(true);
	});
});

describe('2048 rollout: bad replies', () => {
	const bad = [
		'I will move <move>left</move>', // extra text
		'<move>left</move> ok',
		'<move>north</move>', // wrong word
		'<move>Left</move>',
		'left', // missing tag
		'<move>left',
		'' // empty
	];
	for (const reply of bad)
		it(`${JSON.stringify(reply)}: reward -1, the game ends, outcome 'invalid'`, async () => {
			const t = await rollout(policyClient(script(reply)), { model: 'm', seed: 1 });
			expect(t.reward).toBe(-1);
			expect(t.metadata.outcome).toBe('invalid');
			expect(t.metrics.num_moves).toBe(0);
			expect(t.metrics.win).toBe(0);
			expect(t.messagesAndChoices).toHaveLength(3);
			expect(t.logs).toHaveLength(1);
			expect(t.logs[0]).toMatch(/^invalid reply \((no-move|bad-direction): /);
		});

	it('mid-game: three moves, then a bad one', async () => {
		const t = await rollout(
			policyClient(script('<move>down</move>', '<move>left</move>', '<move>down</move>', 'up')),
			{ model: 'm', seed: 1 }
		);
		expect(t.reward).toBe(-1);
		expect(t.metrics.num_moves).toBe(3);
		expect(t.metadata.outcome).toBe('invalid');
		expect(t.choices()).toHaveLength(4);
		expect(t.logs.slice(0, 3).map((l) => l.replace(' (no change)', ''))).toEqual([
			'move 1: down',
			'move 2: left',
			'move 3: down'
		]);
	});

	it("onInvalidReply 'random-move': garbage plays on as seeded random moves to the board's end", async () => {
		const games = await Promise.all(
			[1, 2].map((seed) =>
				rollout(policyClient(script('garbage')), {
					model: 'm',
					seed,
					onInvalidReply: 'random-move'
				})
			)
		);
		for (const t of games) {
			const moves = Number(t.metrics.num_moves);
			expect(moves).toBeGreaterThan(10); // a random game fills the board only after many moves
			expect(t.metrics.replaced_moves).toBe(moves);
			expect(['win', 'full']).toContain(t.metadata.outcome);
			expect(t.choices()).toHaveLength(moves);
			expect(
				t.logs.filter((l) => /^invalid reply \(no-move\) replaced by (left|right|up|down)$/.test(l))
			).toHaveLength(moves);
			// scored as the board ended, not as a bad reply
			const board = JSON.parse(t.metadata.final_board as string) as number[];
			expect(t.reward).toBe(reward(board, 128, t.metadata.outcome === 'win'));
		}
		// the same seed replays the same game; the rule leaves valid replies alone
		const again = await rollout(policyClient(script('garbage')), {
			model: 'm',
			seed: 1,
			onInvalidReply: 'random-move'
		});
		expect(again.metadata.final_board).toBe(games[0].metadata.final_board);
		const valid = await rollout(policyClient(always('left')), {
			model: 'm',
			seed: 1,
			onInvalidReply: 'random-move',
			maxMoves: 5
		});
		expect(valid.metrics.replaced_moves).toBe(0);
		expect(valid.metrics.num_moves).toBe(5);
	});

	it('a null content counts as an empty reply', async () => {
		const t = await rollout(
			policyClient(() => ({ toolCalls: [{ name: 'x', arguments: '{}' }] })),
			{
				model: 'm',
				seed: 1
			}
		);
		expect(t.reward).toBe(-1);
		expect(t.metadata.outcome).toBe('invalid');
	});

	it('refuses a bad winning value or window', async () => {
		const c = policyClient(always('up'));
		await expect(rollout(c, { model: 'm', seed: 1, winningValue: 100 })).rejects.toThrow(
			RangeError
		);
		await expect(rollout(c, { model: 'm', seed: 1, historyTurns: -1 })).rejects.toThrow(RangeError);
	});
});

describe('2048 rollout: the history window', () => {
	/** A game of `dirs` (cycled) at seed 2, its requests, and the boards and moves. */
	async function game(historyTurns: number | null) {
		const dirs: Direction[] = ['down', 'left', 'right', 'up'];
		let i = 0;
		const { client, bodies } = recording(() => ({ content: `<move>${dirs[i++ % 4]}</move>` }));
		const t = await rollout(client, { model: 'm', seed: 2, historyTurns });
		const boards = boardsSent(bodies);
		const moves = boards.map((_, k) => dirs[k % 4]);
		return { t, bodies, boards, moves };
	}

	it('null (ART): the whole game each turn, one growing main history', async () => {
		const { t, bodies, boards, moves } = await game(null);
		expect(boards.length).toBeGreaterThan(10);
		bodies.forEach((body, k) => {
			const expected: Message[] = [S];
			for (let j = 0; j < k; j++) expected.push(user(boards[j]), said(moves[j]));
			expected.push(user(boards[k]));
			expect(body.messages).toEqual(expected);
		});
		expect(t.additionalHistories).toEqual([]);
		expect(t.messagesAndChoices).toHaveLength(1 + 2 * boards.length);
		expect(t.messages().slice(0, -1)).toEqual(bodies[bodies.length - 1].messages);
		expect(t.metrics.history_turns).toBe(-1);
	});

	it('K = 0: the system prompt and the current board; each later turn its own history', async () => {
		const { t, bodies, boards } = await game(0);
		bodies.forEach((body, k) => expect(body.messages).toEqual([S, user(boards[k])]));
		expect(t.messagesAndChoices.slice(0, 2)).toEqual([S, user(boards[0])]);
		expect(t.messagesAndChoices).toHaveLength(3);
		expect(isChoice(t.messagesAndChoices[2])).toBe(true);
		expect(t.additionalHistories).toHaveLength(boards.length - 1);
		t.additionalHistories.forEach((h, j) => {
			expect(h.messagesAndChoices.slice(0, -1)).toEqual(bodies[j + 1].messages);
			expect(isChoice(h.messagesAndChoices[2])).toBe(true);
		});
		expect(t.choices()).toHaveLength(boards.length);
		expect(t.metrics.history_turns).toBe(0);
		expect(t.metadata.history_turns).toBe(0);
	});

	it('K = 2: the last two (board, reply) pairs; turns 0-2 grow the main history', async () => {
		const { t, bodies, boards, moves } = await game(2);
		const b = boards.map(user);
		const a = moves.map(said);
		expect(bodies[0].messages).toEqual([S, b[0]]);
		expect(bodies[1].messages).toEqual([S, b[0], a[0], b[1]]);
		expect(bodies[2].messages).toEqual([S, b[0], a[0], b[1], a[1], b[2]]);
		expect(bodies[3].messages).toEqual([S, b[1], a[1], b[2], a[2], b[3]]);
		expect(bodies[4].messages).toEqual([S, b[2], a[2], b[3], a[3], b[4]]);
		// The main history: turns 0, 1 and 2, each reply a choice.
		const main = t.messagesAndChoices;
		expect(main).toHaveLength(7);
		expect(main.filter((m) => !isChoice(m))).toEqual([S, b[0], b[1], b[2]]);
		expect([2, 4, 6].every((k) => isChoice(main[k]))).toBe(true);
		// Turn 3 on: exactly what was sent, then the turn's choice (earlier replies as context).
		expect(t.additionalHistories).toHaveLength(boards.length - 3);
		const first = t.additionalHistories[0].messagesAndChoices;
		expect(first.slice(0, -1)).toEqual([S, b[1], a[1], b[2], a[2], b[3]]);
		expect(first.filter(isChoice)).toHaveLength(1);
		expect(t.choices().map((c) => c.message.content)).toEqual(
			moves.map((d) => `<move>${d}</move>`)
		);
	});

	it('the window does not change the game, only what is sent', async () => {
		const [x, y, z] = await Promise.all([game(null), game(0), game(2)]);
		expect(y.boards).toEqual(x.boards);
		expect(z.boards).toEqual(x.boards);
		expect(y.t.reward).toBe(x.t.reward);
		expect(replay(y.t)).toEqual(replay(x.t));
		expect(replay(z.t)).toEqual(replay(x.t));
	});
});

describe('2048 policies and demonstrations', () => {
	it('the expert: corner first, then empty cells, then down, left, right, up', () => {
		const move = (policy: Policy, board: number[]) => policy({ messages: [S, user(board)] });
		// prettier-ignore
		const corner = [
			0, 0, 0, 0,
			0, 0, 0, 0,
			16, 0, 0, 0,
			0, 2, 2, 2
		];
		// left frees a cell but leaves the 16 where it is; down puts it in the corner.
		expect(expertMove(corner)).toBe('down');
		// prettier-ignore
		const empty = [
			0, 0, 0, 0,
			0, 0, 0, 0,
			0, 0, 0, 2,
			8, 4, 4, 0
		];
		// both keep an 8 in the corner; left merges the 4s, down merges nothing.
		expect(move(expertPolicy(), empty)).toEqual({ content: '<move>left</move>' });
		expect(move(orderPolicy(), empty)).toEqual({ content: '<move>down</move>' });
		// prettier-ignore
		const order = [
			0, 0, 0, 0,
			2, 0, 0, 0,
			4, 2, 0, 0,
			8, 4, 0, 0
		];
		// down and left change nothing; right and up both take the 8 from the corner and
		// merge nothing: the order decides.
		expect(expertMove(order)).toBe('right');
		expect(move(orderPolicy(), order)).toEqual({ content: '<move>right</move>' });
		expect(move(orderPolicy(['up', 'right']), order)).toEqual({ content: '<move>up</move>' });
		expect(() => expertPolicy()({ messages: [S] })).toThrow(/no user message/);
	});

	it('win rates over seeds 0..199 at W = 128: expert 186, random 21', async () => {
		let expert = 0;
		let random = 0;
		for (let seed = 0; seed < 200; seed++) {
			const o = { model: 'm', seed, historyTurns: 0 };
			expert += (await rollout(policyClient(expertPolicy()), o)).metrics.win as number;
			random += (await rollout(policyClient(randomPolicy(seed)), o)).metrics.win as number;
		}
		expect(expert).toBe(186);
		expect(random).toBe(21);
	});

	it('demonstrations are expert rollouts from seeds seed * 1_000_003 + i', async () => {
		const demos = await demonstrations(3, 5, { winningValue: 64, historyTurns: 1 });
		expect(demos.map((d) => d.metadata.seed)).toEqual([5_000_015, 5_000_016, 5_000_017]);
		for (const d of demos) {
			expect(d.metadata.source).toBe('expert');
			const again = await rollout(policyClient(expertPolicy()), {
				model: 'expert',
				seed: d.metadata.seed as number,
				winningValue: 64,
				historyTurns: 1
			});
			expect(d.histories()).toEqual(again.histories());
			expect(d.reward).toBe(again.reward);
			expect(d.metadata.outcome).not.toBe('invalid');
		}
	});

	it('explored demonstrations play off the expert path and record the expert on every board', async () => {
		const options = { winningValue: 64, historyTurns: 0, explore: 0.3 };
		const explored = await demonstrations(20, 9, options);
		const plain = await demonstrations(20, 9, { ...options, explore: 0 });
		let replies = 0;
		let offPath = 0;
		for (const [i, game] of explored.entries()) {
			expect(game.metadata.source).toBe('expert, 0.3 explored');
			for (const h of game.histories()) {
				const items = h.messagesAndChoices;
				const board = parseBoard(String((items[items.length - 2] as Message).content))!;
				const choice = items[items.length - 1];
				if (!isChoice(choice)) throw new Error('a history ends in a reply');
				expect(choice.message.content).toBe(`<move>${expertMove(board)}</move>`);
				replies++;
			}
			// the moves played were not all the expert's: the game went elsewhere
			const played = game.logs.filter((l) => l.startsWith('move ')).map((l) => l.split(' ')[2]);
			const expertPlayed = plain[i].logs
				.filter((l) => l.startsWith('move '))
				.map((l) => l.split(' ')[2]);
			if (JSON.stringify(played) !== JSON.stringify(expertPlayed)) offPath++;
		}
		expect(replies).toBeGreaterThan(20 * 10);
		expect(offPath).toBeGreaterThanOrEqual(18);
		// some explored move changed nothing: the boards after it are in the data
		expect(explored.some((g) => g.logs.some((l) => l.endsWith('(no change)')))).toBe(true);
		expect(plain.some((g) => g.logs.some((l) => l.endsWith('(no change)')))).toBe(false);
		await expect(demonstrations(1, 9, { explore: 1 })).rejects.toThrow(RangeError);
	});

	it('demonstration conversations: one per move with a window of 0, from consecutive games', async () => {
		const convs = await demonstrationConversations(100, 4, { winningValue: 64, historyTurns: 0 });
		expect(convs).toHaveLength(100);
		const games = await demonstrations(3, 4, { winningValue: 64, historyTurns: 0 });
		const flat = games.flatMap((g) => g.histories());
		expect(convs.slice(0, Math.min(100, flat.length)).map((c) => c.histories()[0])).toEqual(
			flat.slice(0, 100).map((h) => ({ ...h, tools: null }))
		);
		for (const c of convs) expect(c.messagesAndChoices).toHaveLength(3); // system, board, reply
	});
});

describe('2048 replay', () => {
	it('the boards between moves, the final board and the outcome', async () => {
		const t = await rollout(policyClient(expertPolicy()), {
			model: 'm',
			seed: 3,
			winningValue: 16,
			historyTurns: 2
		});
		expect((t.messagesAndChoices[1] as Message).content).toBe(
			'_|_|_|_\n_|_|2|_\n_|_|_|2\n_|_|_|_\n'
		);
		const items = replay(t);
		expect(items).toHaveLength(12 + 2);
		expect(items[0]).toEqual({
			kind: 'board',
			rows: [
				['', '', '', ''],
				['', '', '2', ''],
				['', '', '', '2'],
				['', '', '', '']
			],
			caption: 'start'
		});
		expect(items.slice(1, 12).map((i) => (i.kind === 'board' ? i.caption : ''))).toEqual(
			t.logs.slice(0, 11)
		);
		expect(items[12]).toEqual({
			kind: 'board',
			rows: [
				['', '', '', ''],
				['2', '', '', ''],
				['4', '2', '', ''],
				['16', '2', '', '2']
			],
			caption: 'move 12: left (final)'
		});
		expect(items[13]).toEqual({ kind: 'outcome', text: 'won: 16 reached in 12 moves', reward: 2 });
	});

	it('a full board, and an invalid reply', async () => {
		const full = await rollout(policyClient(always('up')), { model: 'm', seed: 0 });
		const items = replay(full);
		const n = full.metrics.num_moves as number;
		expect(items).toHaveLength(n + 2);
		expect(items[n + 1]).toEqual({
			kind: 'outcome',
			text: `board full, max ${full.metrics.max_value}, after ${n} moves`,
			reward: full.reward
		});

		const bad = await rollout(policyClient(script('<move>up</move>', 'hello')), {
			model: 'm',
			seed: 0
		});
		const b = replay(bad);
		expect(b.map((i) => (i.kind === 'board' ? i.caption : i.kind))).toEqual([
			'start',
			'move 1: up',
			'outcome'
		]);
		expect(b[2]).toEqual({
			kind: 'outcome',
			text: 'invalid reply after 1 moves: "hello"',
			reward: -1
		});
	});
});
