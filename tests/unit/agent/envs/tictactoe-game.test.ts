/**
 * The tic-tac-toe engine (src/lib/agent/envs/tictactoe/rules.ts) without a model: ART's board
 * text, square names, every game of tic-tac-toe played out (the known counts: 255,168 games,
 * 131,184 won by the first player, 77,904 by the second, 46,080 drawn; 5,478 positions),
 * the reply parser over a table of replies, and the rewards.
 */
import { describe, expect, it } from 'vitest';
import {
	REWARD,
	checkMove,
	emptyBoard,
	illegalMoveReward,
	legalMoves,
	parseMove,
	play,
	renderBoard,
	squareIndex,
	squareName,
	winner,
	type Board,
	type Cell,
	type Mark
} from '../../../../src/lib/agent/envs/tictactoe/rules';

const board = (rows: string): Cell[] => rows.replace(/\s/g, '').split('') as Cell[];

describe('board', () => {
	it("renders as ART's example does", () => {
		expect(renderBoard(board('_xx o__ _o_'))).toBe(
			'   1   2   3\nA  _ | x | x\nB  o | _ | _\nC  _ | o | _\n'
		);
		expect(renderBoard(emptyBoard())).toBe(
			'   1   2   3\nA  _ | _ | _\nB  _ | _ | _\nC  _ | _ | _\n'
		);
	});

	it('names squares row letter + column digit, both ways', () => {
		const names = Array.from({ length: 9 }, (_, i) => squareName(i));
		expect(names).toEqual(['A1', 'A2', 'A3', 'B1', 'B2', 'B3', 'C1', 'C2', 'C3']);
		names.forEach((n, i) => expect(squareIndex(n)).toBe(i));
		for (const bad of ['D1', 'A0', 'A4', 'a1', 'B', 'B22', ' B2', '', '11'])
			expect(squareIndex(bad), bad).toBeNull();
		expect(() => squareName(9)).toThrow(RangeError);
	});

	it('legal moves are the empty squares, row-major; play fills one and refuses a taken one', () => {
		const b = board('x_o _x_ o__');
		expect(legalMoves(b)).toEqual([1, 3, 5, 7, 8]);
		const next = play(b, 1, 'o');
		expect(next.join('')).toBe('xoo_x_o__');
		expect(b.join('')).toBe('x_o_x_o__'); // the board given is not changed
		expect(() => play(b, 0, 'o')).toThrow(/A1 is not empty/);
	});

	it('finds every line, a draw on a full board, and nothing on an open one', () => {
		expect(winner(board('xxx oo_ ___'))).toBe('x');
		expect(winner(board('xx_ ooo x__'))).toBe('o');
		expect(winner(board('x__ x_o xo_'))).toBe('x');
		expect(winner(board('_o_ xo_ xo_'))).toBe('o');
		expect(winner(board('x_o _o_ ox_'))).toBe('o'); // anti-diagonal
		expect(winner(board('x_o _xo __x'))).toBe('x'); // diagonal
		expect(winner(board('xox xoo oxx'))).toBe('draw');
		expect(winner(board('xox xoo ox_'))).toBeNull();
		// A full board with a line is a win, not a draw.
		expect(winner(board('xxx oox oxo'))).toBe('x');
	});

	it('plays out every game of tic-tac-toe to the known counts', () => {
		const counts = { x: 0, o: 0, draw: 0 };
		const positions = new Set<string>();
		const walk = (b: Board, turn: Mark) => {
			positions.add(b.join(''));
			const w = winner(b);
			if (w !== null) {
				counts[w]++;
				return;
			}
			for (const i of legalMoves(b)) walk(play(b, i, turn), turn === 'x' ? 'o' : 'x');
		};
		walk(emptyBoard(), 'x');
		expect(counts).toEqual({ x: 131184, o: 77904, draw: 46080 });
		expect(counts.x + counts.o + counts.draw).toBe(255168);
		expect(positions.size).toBe(5478);
	});
});

describe('parseMove', () => {
	const cases: [string, string | null, string | null, string][] = [
		// reply, strict result (square or problem), non-strict result, why
		['<move>B2</move>', 'B2', 'B2', 'the format asked for'],
		['  <move>C3</move>\n', 'C3', 'C3', 'surrounding whitespace'],
		['<move> A1 </move>', 'A1', 'A1', 'whitespace inside'],
		['I play <move>B2</move>', 'no-move', 'B2', 'text before'],
		['<move>B2</move> because', 'no-move', 'B2', 'text after'],
		['<move>A1</move><move>C3</move>', 'no-move', 'C3', 'two moves: non-strict takes the last'],
		['<think>hmm</think>\n<move>A3</move>', 'no-move', 'A3', 'thinking first'],
		['B2', 'no-move', 'no-move', 'no element'],
		['<move>B2', 'no-move', 'no-move', 'unclosed'],
		['<Move>B2</Move>', 'no-move', 'no-move', 'tag name is case-sensitive'],
		['<move></move>', 'bad-square', 'bad-square', 'empty'],
		['<move>b2</move>', 'bad-square', 'bad-square', 'lower-case row'],
		['<move>B22</move>', 'bad-square', 'bad-square', 'three characters'],
		['<move>2B</move>', 'bad-square', 'bad-square', 'column first'],
		['<move>middle</move>', 'bad-square', 'bad-square', 'a word'],
		['<move>D1</move>', 'off-board', 'off-board', 'no row D'],
		['<move>A4</move>', 'off-board', 'off-board', 'no column 4'],
		['<move>A0</move>', 'off-board', 'off-board', 'no column 0'],
		['', 'no-move', 'no-move', 'empty reply'],
		['\ufffd\ufffd<mo', 'no-move', 'no-move', 'garbage']
	];
	const outcome = (r: ReturnType<typeof parseMove>) => (r.ok ? r.square : r.problem);

	it.each(cases)('%j: strict %s, non-strict %s (%s)', (reply, strict, loose) => {
		expect(outcome(parseMove(reply))).toBe(strict);
		expect(outcome(parseMove(reply, { strict: false }))).toBe(loose);
	});

	it('gives the index with the square', () => {
		expect(parseMove('<move>C1</move>')).toEqual({ ok: true, index: 6, square: 'C1' });
	});

	it('checkMove adds the occupied square', () => {
		const b = board('x__ _o_ ___');
		expect(checkMove(b, '<move>B2</move>')).toMatchObject({ ok: false, problem: 'occupied' });
		expect(checkMove(b, '<move>A1</move>')).toMatchObject({ ok: false, problem: 'occupied' });
		expect(checkMove(b, '<move>A2</move>')).toEqual({ ok: true, index: 1, square: 'A2' });
		expect(checkMove(b, 'A2')).toMatchObject({ ok: false, problem: 'no-move' });
	});
});

describe('rewards', () => {
	it("are ART's: win 1, draw 0.5, loss 0, an illegal move -1 + ln(n + 1) / ln(100)", () => {
		expect(REWARD).toEqual({ win: 1, draw: 0.5, loss: 0 });
		expect(illegalMoveReward(0)).toBe(-1);
		expect(illegalMoveReward(1)).toBeCloseTo(-1 + Math.LN2 / Math.log(100), 15);
		expect(illegalMoveReward(99)).toBeCloseTo(0, 15);
		// At most 4 legal moves come before the agent's last: always below a loss.
		for (let n = 0; n <= 4; n++) {
			expect(illegalMoveReward(n)).toBeLessThan(REWARD.loss);
			if (n) expect(illegalMoveReward(n)).toBeGreaterThan(illegalMoveReward(n - 1));
		}
	});
});
