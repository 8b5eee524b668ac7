/**
 * @file 2048 as ART's example plays it (OpenPipe/ART examples/2048/utils.py and rollout.py),
 * as a pure engine: the board, sliding and merging, spawning, the end test, the text
 * rendering the model reads, the agent's reply parsed from `<move>left</move>`, and the
 * reward. Randomness only through an `Rng` passed in (rollout.ts owns the game's one).
 *
 * ART's rules kept:
 * - 4x4 board; a new game has two tiles, each placed like every later spawn: a uniformly
 *   random empty cell (row-major list, one draw), then 2 with probability 0.9, else 4;
 * - a move slides every line toward its side; equal neighbours merge once, the pair
 *   nearest that side first (2 2 2 _ left is 4 2 _ _); after every accepted move a tile
 *   spawns, even when the move changed nothing (ART's apply_agent_move spawns
 *   unconditionally);
 * - the game ends when the largest tile is at least the winning value, or when no cell is
 *   empty, merges still possible or not (ART's check_game_finished), tested after each
 *   move (never on the starting board);
 * - rendering: one line per row, cells joined by '|', every cell (the '_' of an empty cell
 *   included) right-aligned to the widest number on the board, a newline after every row
 *   (the last included): `_|2|_|4` with one-digit tiles, ` 2|16| _| _` with two-digit ones;
 * - reward: 2 for a win (max >= W); otherwise (log2 max - 1) / (log2 W - 1) +
 *   0.2 * (log2 sum - 1) / (log2 16W - 1), sum the sum of the tiles; an invalid reply -1.
 *
 * Parsing differs from ART on purpose: ART gives the reply to an XML parser
 * (ElementTree.fromstring) and takes the root element's text, so it also accepts surrounding
 * whitespace, any tag name (`<foo>left</foo>`), attributes, child elements, comments,
 * CDATA and character references. Here the reply must be exactly `<move>DIR</move>`, DIR one
 * of left, right, up, down: the one form ART's prompt asks for, and nothing else.
 */
import type { Rng } from '../../../util/random';

/** [4 * 4] tile values, row-major (index = 4 * row + column); 0 is an empty cell. */
export type Board = readonly number[];

export type Direction = 'left' | 'right' | 'up' | 'down';

/** ART's list of moves, in its order. */
export const DIRECTIONS: readonly Direction[] = ['left', 'right', 'up', 'down'];

export const SIZE = 4;
/** ART's utils.py WINNING_VALUE. */
export const DEFAULT_WINNING_VALUE = 128;
/** ART: `trajectory.reward = 2` when max_value >= WINNING_VALUE ("double reward"). */
export const WIN_REWARD = 2;
/** ART: `trajectory.reward = -1` when the reply is not a move. */
export const INVALID_REWARD = -1;

/** An empty board. */
export function emptyBoard(): number[] {
	return Array<number>(SIZE * SIZE).fill(0);
}

/** Throws unless `w` is a power of two of at least 4 (the reward divides by log2 W - 1). */
export function checkWinningValue(w: number): void {
	if (!Number.isInteger(w) || w < 4 || (w & (w - 1)) !== 0)
		throw new RangeError(`The winning value must be a power of two >= 4, not ${w}`);
}

/** A new board with a tile on a random empty cell: 2 (p 0.9) or 4 (ART's populate_random_cell). */
export function spawn(board: Board, rng: Rng): number[] {
	const empty: number[] = [];
	board.forEach((v, i) => {
		if (v === 0) empty.push(i);
	});
	if (empty.length === 0) throw new RangeError('No empty cell to spawn a tile on');
	const next = [...board];
	next[empty[rng.int(empty.length)]] = rng.next() < 0.9 ? 2 : 4;
	return next;
}

/** A new game: two spawns on an empty board (ART's generate_game). */
export function newBoard(rng: Rng): number[] {
	return spawn(spawn(emptyBoard(), rng), rng);
}

/** The cells of each line, starting from the side the tiles move toward. */
function lines(direction: Direction): number[][] {
	const out: number[][] = [];
	for (let k = 0; k < SIZE; k++) {
		const line = Array.from({ length: SIZE }, (_, j) =>
			direction === 'left' || direction === 'right' ? SIZE * k + j : SIZE * j + k
		);
		out.push(direction === 'right' || direction === 'down' ? line.reverse() : line);
	}
	return out;
}

/** One line slid toward its start: gaps closed, each equal pair merged once, first pair first. */
export function slide(line: readonly number[]): number[] {
	const tiles = line.filter((v) => v !== 0);
	const out: number[] = [];
	for (let i = 0; i < tiles.length; i++) {
		if (i + 1 < tiles.length && tiles[i] === tiles[i + 1]) {
			out.push(2 * tiles[i]);
			i++;
		} else out.push(tiles[i]);
	}
	while (out.length < line.length) out.push(0);
	return out;
}

/** The board after sliding toward `direction` (no spawn), and whether any tile moved. */
export function applyMove(
	board: Board,
	direction: Direction
): { board: number[]; changed: boolean } {
	const next = [...board];
	for (const cells of lines(direction)) {
		const slid = slide(cells.map((i) => board[i]));
		cells.forEach((cell, j) => (next[cell] = slid[j]));
	}
	return { board: next, changed: next.some((v, i) => v !== board[i]) };
}

export function maxValue(board: Board): number {
	return Math.max(...board);
}

/** The sum of the tiles (ART's total_board_value). */
export function boardValue(board: Board): number {
	return board.reduce((a, b) => a + b, 0);
}

/** True when the largest tile is at least `winningValue` or no cell is empty. */
export function finished(board: Board, winningValue: number): boolean {
	return maxValue(board) >= winningValue || !board.includes(0);
}

/** ART's render_board: rows of '|'-joined cells right-aligned to the widest tile, '_' empty. */
export function renderBoard(board: Board): string {
	const width = Math.max(1, ...board.filter((v) => v !== 0).map((v) => String(v).length));
	let text = '';
	for (let r = 0; r < SIZE; r++) {
		const row = board.slice(SIZE * r, SIZE * (r + 1));
		text += row.map((v) => (v === 0 ? '_' : String(v)).padStart(width)).join('|') + '\n';
	}
	return text;
}

/** The board of a renderBoard text (surrounding whitespace ignored), or null if it is none. */
export function parseBoard(text: string): number[] | null {
	const rows = text.trim().split('\n');
	if (rows.length !== SIZE) return null;
	const board: number[] = [];
	for (const row of rows) {
		const cells = row.split('|').map((c) => c.trim());
		if (cells.length !== SIZE) return null;
		for (const cell of cells) {
			if (cell === '_') board.push(0);
			else if (/^[1-9][0-9]*$/.test(cell)) board.push(Number(cell));
			else return null;
		}
	}
	return board;
}

/** Why a reply is not a move. */
export type MoveProblem = 'no-move' | 'bad-direction';

export type MoveResult =
	{ ok: true; direction: Direction } | { ok: false; problem: MoveProblem; detail: string };

const MOVE = /^<move>([^<]*)<\/move>$/;

/** The direction of a reply that is exactly `<move>DIR</move>`, or why it is not one. */
export function parseMove(reply: string): MoveResult {
	const inner = MOVE.exec(reply)?.[1];
	if (inner === undefined)
		return {
			ok: false,
			problem: 'no-move',
			detail: 'the reply is not exactly one <move>...</move> element'
		};
	if (!(DIRECTIONS as readonly string[]).includes(inner))
		return {
			ok: false,
			problem: 'bad-direction',
			detail: `"${inner}" is not one of ${DIRECTIONS.join(', ')}`
		};
	return { ok: true, direction: inner as Direction };
}

/**
 * ART's reward of a finished game: 2 for a win; otherwise the largest tile scaled by log2
 * from 0 (a 2) to 1 (W), plus 0.2 times the board's sum scaled by log2 from 0 (a sum of 2)
 * to 1 (16 W).
 */
export function reward(board: Board, winningValue: number, won: boolean): number {
	if (won) return WIN_REWARD;
	const max = (Math.log2(maxValue(board)) - 1) / (Math.log2(winningValue) - 1);
	const sum = (Math.log2(boardValue(board)) - 1) / (Math.log2(16 * winningValue) - 1);
	return max + 0.2 * sum;
}
