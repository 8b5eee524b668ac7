/**
 * @file Tic-tac-toe as ART's example plays it (OpenPipe/ART examples/tic_tac_toe/
 * game_utils.py and the tic-tac-toe.ipynb notebook), as a pure engine: the board, its text
 * rendering, legal moves, the winner, the agent's reply parsed from `<move>B2</move>`, and
 * the rewards. No model, no randomness here (tictactoe.ts plays games with both).
 *
 * ART's conventions kept: marks 'x' and 'o' in lower case, '_' for an empty cell; rows
 * A-C top to bottom, columns 1-3 left to right, a square named like 'B2'; the board
 * rendered as
 *
 *        1   2   3
 *     A  _ | x | x
 *     B  o | _ | _
 *     C  _ | o | _
 *
 * (three spaces, the column numbers three spaces apart; each row its letter, two spaces and
 * the cells joined by ' | '; a newline after every line); lines checked rows, columns, the
 * anti-diagonal, the diagonal, then a full board is a draw; rewards: win 1, draw 0.5,
 * loss 0, and an illegal move -1 + ln(n + 1) / ln(100) with n the agent's legal moves
 * before it (the notebook's value: -1 on the first move, rising slowly with game length).
 *
 * Parsing, stated because ART's is an XML parser's behaviour rather than a rule: strict
 * (the default, as ART: ElementTree.fromstring of the whole reply) wants the reply, bar
 * surrounding whitespace, to be one `<move>` element; its text, bar surrounding whitespace,
 * must be an upper-case row letter and a column digit (ART reads the first two characters
 * only and fails on a leading space; here exactly two are required). Non-strict takes the
 * last `<move>...</move>` anywhere in the reply, for models that think aloud first.
 */

export type Mark = 'x' | 'o';
export type Cell = Mark | '_';
/** [3 * 3] cells, row-major: index = 3 * row + column (row A = 0, column 1 = 0). */
export type Board = readonly Cell[];

export const SIZE = 3;
const ROWS = 'ABC';

/** Rewards of a finished game and of an illegal move (ART's notebook). */
export const REWARD = { win: 1, draw: 0.5, loss: 0 } as const;

/** ART: trajectory.reward = -1 + log(move_number + 1) / log(100) on an invalid move. */
export function illegalMoveReward(legalMovesBefore: number): number {
	return -1 + Math.log(legalMovesBefore + 1) / Math.log(100);
}

export function emptyBoard(): Cell[] {
	return Array<Cell>(SIZE * SIZE).fill('_');
}

export function otherMark(mark: Mark): Mark {
	return mark === 'x' ? 'o' : 'x';
}

/** 'A1' for 0, 'C3' for 8. */
export function squareName(index: number): string {
	if (!Number.isInteger(index) || index < 0 || index >= SIZE * SIZE)
		throw new RangeError(`No square ${index} on a ${SIZE}x${SIZE} board`);
	return `${ROWS[Math.floor(index / SIZE)]}${(index % SIZE) + 1}`;
}

/** 4 for 'B2'; null for anything that is not a square of the board. */
export function squareIndex(name: string): number | null {
	const m = /^([A-Z])([0-9])$/.exec(name);
	if (!m) return null;
	const row = ROWS.indexOf(m[1]);
	const col = Number(m[2]) - 1;
	if (row < 0 || col < 0 || col >= SIZE) return null;
	return row * SIZE + col;
}

export function renderBoard(board: Board): string {
	let text = '   ' + Array.from({ length: SIZE }, (_, c) => c + 1).join('   ') + '\n';
	for (let r = 0; r < SIZE; r++)
		text += `${ROWS[r]}  ${board.slice(r * SIZE, (r + 1) * SIZE).join(' | ')}\n`;
	return text;
}

/** Indices of the empty squares, row-major (the order ART's opponent draws from). */
export function legalMoves(board: Board): number[] {
	const out: number[] = [];
	board.forEach((cell, i) => {
		if (cell === '_') out.push(i);
	});
	return out;
}

/** The lines of three, in the order ART checks them. */
const LINES: readonly (readonly number[])[] = [
	[0, 1, 2],
	[3, 4, 5],
	[6, 7, 8],
	[0, 3, 6],
	[1, 4, 7],
	[2, 5, 8],
	[2, 4, 6],
	[0, 4, 8]
];

/** The mark with three in a line, 'draw' for a full board without one, else null. */
export function winner(board: Board): Mark | 'draw' | null {
	for (const [a, b, c] of LINES) {
		const m = board[a];
		if (m !== '_' && m === board[b] && m === board[c]) return m;
	}
	return board.includes('_') ? null : 'draw';
}

/** A new board with `mark` on the empty square `index`. */
export function play(board: Board, index: number, mark: Mark): Cell[] {
	if (board[index] !== '_')
		throw new RangeError(`Square ${squareName(index)} is not empty (${board[index]})`);
	const next = [...board];
	next[index] = mark;
	return next;
}

/** Why a reply is not a legal move. */
export type MoveProblem = 'no-move' | 'bad-square' | 'off-board' | 'occupied';

export type MoveResult =
	{ ok: true; index: number; square: string } | { ok: false; problem: MoveProblem; detail: string };

export interface ParseOptions {
	/** The whole reply must be the <move> element (ART). Default true. */
	strict?: boolean;
}

const STRICT = /^<move>([^<]*)<\/move>$/;
const ANYWHERE = /<move>([^<]*)<\/move>/g;

/** The square a reply names, or why it names none (board occupancy not checked). */
export function parseMove(reply: string, { strict = true }: ParseOptions = {}): MoveResult {
	let inner: string | undefined;
	if (strict) inner = STRICT.exec(reply.trim())?.[1];
	else for (const m of reply.matchAll(ANYWHERE)) inner = m[1];
	if (inner === undefined)
		return {
			ok: false,
			problem: 'no-move',
			detail: strict ? 'the reply is not one <move>...</move> element' : 'no <move>...</move>'
		};
	const square = inner.trim();
	if (!/^[A-Z][0-9]$/.test(square))
		return { ok: false, problem: 'bad-square', detail: `"${square}" is not a square like B2` };
	const index = squareIndex(square);
	if (index === null)
		return { ok: false, problem: 'off-board', detail: `${square} is not on the board` };
	return { ok: true, index, square };
}

/** parseMove, then the square must be empty on `board`. */
export function checkMove(board: Board, reply: string, options: ParseOptions = {}): MoveResult {
	const move = parseMove(reply, options);
	if (move.ok && board[move.index] !== '_')
		return { ok: false, problem: 'occupied', detail: `${move.square} is taken` };
	return move;
}
