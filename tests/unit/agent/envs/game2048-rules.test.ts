/**
 * The pure 2048 game (src/lib/agent/envs/game2048/rules.ts) against hand-worked boards: sliding
 * and merging in each direction, spawns, the end test, ART's rendering as exact strings,
 * the strict reply parser, and ART's reward against numbers worked out by hand.
 */
import { describe, expect, it } from 'vitest';
import {
	applyMove,
	boardValue,
	checkWinningValue,
	emptyBoard,
	finished,
	maxValue,
	newBoard,
	parseBoard,
	parseMove,
	renderBoard,
	reward,
	slide,
	spawn,
	type Board
} from '../../../../src/lib/agent/envs/game2048/rules';
import { Rng } from '../../../../src/lib/util/random';

// prettier-ignore
const B: Board = [
	2, 2, 4, 0,
	0, 4, 4, 4,
	2, 0, 2, 8,
	2, 8, 0, 8
];

describe('slide and applyMove', () => {
	it('merges each pair once, the pair nearest the side first', () => {
		expect(slide([2, 2, 2, 0])).toEqual([4, 2, 0, 0]);
		expect(slide([2, 2, 2, 2])).toEqual([4, 4, 0, 0]);
		expect(slide([4, 0, 4, 8])).toEqual([8, 8, 0, 0]);
		expect(slide([4, 4, 8, 0])).toEqual([8, 8, 0, 0]);
		expect(slide([2, 4, 8, 16])).toEqual([2, 4, 8, 16]);
		expect(slide([0, 0, 0, 2])).toEqual([2, 0, 0, 0]);
	});

	it('moves the whole board in each direction', () => {
		// prettier-ignore
		expect(applyMove(B, 'left')).toEqual({ changed: true, board: [
			4, 4, 0, 0,
			8, 4, 0, 0,
			4, 8, 0, 0,
			2, 16, 0, 0
		] });
		// prettier-ignore
		expect(applyMove(B, 'right')).toEqual({ changed: true, board: [
			0, 0, 4, 4,
			0, 0, 4, 8,
			0, 0, 4, 8,
			0, 0, 2, 16
		] });
		// prettier-ignore
		expect(applyMove(B, 'up')).toEqual({ changed: true, board: [
			4, 2, 8, 4,
			2, 4, 2, 16,
			0, 8, 0, 0,
			0, 0, 0, 0
		] });
		// prettier-ignore
		expect(applyMove(B, 'down')).toEqual({ changed: true, board: [
			0, 0, 0, 0,
			0, 2, 0, 0,
			2, 4, 8, 4,
			4, 8, 2, 16
		] });
	});

	it('reports no change when nothing can move, and does not touch its input', () => {
		// prettier-ignore
		const packed = [
			2, 4, 0, 0,
			8, 0, 0, 0,
			0, 0, 0, 0,
			4, 2, 8, 0
		];
		const copy = [...packed];
		expect(applyMove(packed, 'left')).toEqual({ changed: false, board: packed });
		expect(applyMove(packed, 'right').changed).toBe(true);
		applyMove(packed, 'down');
		expect(packed).toEqual(copy);
	});
});

describe('spawn, newBoard, finished, values', () => {
	it('spawn puts a 2 or 4 on the empty cell the generator picks', () => {
		const board = [...B];
		const empties = [3, 4, 9, 14];
		const probe = new Rng(11);
		const cell = empties[probe.int(empties.length)];
		const value = probe.next() < 0.9 ? 2 : 4;
		const next = spawn(board, new Rng(11));
		expect(next.filter((v, i) => v !== board[i])).toEqual([value]);
		expect(next[cell]).toBe(value);
		expect(board).toEqual(B);
	});

	it('spawns 2 nine times in ten, uniformly over the empty cells', () => {
		const rng = new Rng(3);
		let fours = 0;
		const where = Array<number>(16).fill(0);
		const n = 20000;
		for (let i = 0; i < n; i++) {
			const b = spawn(emptyBoard(), rng);
			const at = b.findIndex((v) => v !== 0);
			where[at]++;
			if (b[at] === 4) fours++;
		}
		expect(Math.abs(fours / n - 0.1)).toBeLessThan(0.01);
		for (const count of where) expect(Math.abs(count / n - 1 / 16)).toBeLessThan(0.01);
	});

	it('throws on a full board', () => {
		expect(() => spawn(Array<number>(16).fill(2), new Rng(1))).toThrow(RangeError);
	});

	it('a new game has two tiles; the seed fixes them', () => {
		const b = newBoard(new Rng(7));
		// prettier-ignore
		expect(b).toEqual([
			2, 0, 0, 0,
			0, 0, 0, 0,
			0, 0, 0, 0,
			0, 0, 0, 2
		]);
		for (let s = 0; s < 50; s++) {
			const tiles = newBoard(new Rng(s)).filter((v) => v !== 0);
			expect(tiles.length).toBe(2);
			for (const t of tiles) expect([2, 4]).toContain(t);
		}
	});

	it('ends at the winning value or on a full board, merges possible or not', () => {
		const full = [2, 2, 4, 8, 16, 32, 64, 2, 4, 8, 16, 32, 64, 2, 4, 8];
		expect(applyMove(full, 'left').changed).toBe(true); // a merge is possible ...
		expect(finished(full, 128)).toBe(true); // ... and still the game is over
		const open = [...full];
		open[5] = 0;
		expect(finished(open, 128)).toBe(false);
		expect(finished(open, 64)).toBe(true); // a 64 is on the board
		open[6] = 128;
		expect(finished(open, 128)).toBe(true);
		expect(maxValue(full)).toBe(64);
		expect(boardValue(full)).toBe(
			2 + 2 + 4 + 8 + 16 + 32 + 64 + 2 + 4 + 8 + 16 + 32 + 64 + 2 + 4 + 8
		);
	});

	it('winning values are powers of two >= 4', () => {
		expect(() => checkWinningValue(128)).not.toThrow();
		expect(() => checkWinningValue(4)).not.toThrow();
		for (const w of [2, 0, 100, 128.5, -128])
			expect(() => checkWinningValue(w)).toThrow(RangeError);
	});
});

describe('renderBoard and parseBoard (ART render_board)', () => {
	it('one-digit tiles: cells joined by |, _ for empty, a newline after every row', () => {
		// prettier-ignore
		const b = [
			0, 2, 0, 4,
			0, 0, 0, 0,
			0, 0, 0, 2,
			0, 0, 0, 0
		];
		expect(renderBoard(b)).toBe('_|2|_|4\n_|_|_|_\n_|_|_|2\n_|_|_|_\n');
	});

	it("right-aligns every cell, '_' included, to the widest tile (ART's example board)", () => {
		// prettier-ignore
		const b = [
			0, 2, 0, 4,
			4, 8, 2, 16,
			16, 32, 64, 128,
			0, 2, 2, 4
		];
		expect(renderBoard(b)).toBe(
			'  _|  2|  _|  4\n  4|  8|  2| 16\n 16| 32| 64|128\n  _|  2|  2|  4\n'
		);
		expect(renderBoard([16, ...Array<number>(15).fill(0)])).toBe(
			'16| _| _| _\n _| _| _| _\n _| _| _| _\n _| _| _| _\n'
		);
	});

	it('parseBoard reads a rendering back, and refuses other text', () => {
		for (const b of [B, [0, 2, 0, 4, 4, 8, 2, 16, 16, 32, 64, 128, 0, 2, 2, 4]])
			expect(parseBoard(renderBoard(b))).toEqual(b);
		expect(parseBoard('_|2|_\n_|_|_\n_|_|_\n')).toBeNull();
		expect(parseBoard('hello')).toBeNull();
		expect(parseBoard('_|2|_|x\n_|_|_|_\n_|_|_|2\n_|_|_|_\n')).toBeNull();
	});
});

describe('parseMove (strict: exactly <move>DIR</move>)', () => {
	it('accepts the four directions', () => {
		for (const d of ['left', 'right', 'up', 'down'] as const)
			expect(parseMove(`<move>${d}</move>`)).toEqual({ ok: true, direction: d });
	});

	it('refuses anything else', () => {
		const noMove = [
			'',
			'left',
			'<move>left</move> ',
			' <move>left</move>',
			'<move>left</move>\n',
			'I play <move>left</move>',
			'<move>left</move> because',
			'<move>left</move><move>up</move>',
			'<Move>left</Move>',
			'<move>left',
			'<foo>left</foo>',
			'<move a="1">left</move>'
		];
		for (const reply of noMove)
			expect(parseMove(reply)).toMatchObject({ ok: false, problem: 'no-move' });
		for (const reply of [
			'<move>Left</move>',
			'<move>north</move>',
			'<move> left</move>',
			'<move></move>'
		])
			expect(parseMove(reply)).toMatchObject({ ok: false, problem: 'bad-direction' });
	});
});

describe('reward (ART rollout.py)', () => {
	it('2 for a win', () => {
		expect(reward([128, 2, ...Array<number>(14).fill(0)], 128, true)).toBe(2);
	});

	it('max 64, sum 100, W 128: (6 - 1) / (7 - 1) + 0.2 * (log2 100 - 1) / (11 - 1)', () => {
		const b = [64, 32, 4, ...Array<number>(13).fill(0)];
		// 5/6 = 0.833333; log2(100) = 6.643856, so 0.2 * 5.643856 / 10 = 0.112877
		expect(reward(b, 128, false)).toBeCloseTo(0.94621, 5);
	});

	it('max 2, sum 4, W 64: 0 + 0.2 * (2 - 1) / (10 - 1)', () => {
		expect(reward([2, 2, ...Array<number>(14).fill(0)], 64, false)).toBeCloseTo(0.022222, 6);
	});

	it('max 32, sum 256, W 256: 4 / 7 + 0.2 * 7 / 11', () => {
		const b = [32, 32, 32, 32, 32, 32, 32, 16, 8, 4, 2, 2, 0, 0, 0, 0];
		expect(boardValue(b)).toBe(256);
		expect(reward(b, 256, false)).toBeCloseTo(0.698701, 6);
	});
});
