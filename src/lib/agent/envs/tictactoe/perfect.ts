/**
 * @file Perfect tic-tac-toe (minimax), the opponent that measures how well an agent holds a
 * game it cannot win: against it the best result is a draw, so its draw rate is the agent's
 * share of flawless games.
 *
 * - `positionValue(board, toMove)`: +1 when `toMove` wins with best play from both sides,
 *   0 for a draw, -1 for a loss (of a finished board: its result for `toMove`).
 * - `perfectMoves(board, mark)`: the empty squares, row-major, whose move keeps `mark`'s best
 *   value; a perfect player picks among them (rollout.ts draws one with the game's generator,
 *   so games against it differ).
 *
 * Values are memoized by board and mark: 3^9 boards bound the table, ~5.5k are reachable.
 * (`0 - v`, not `-v`: a draw is +0, never -0.)
 */
import { legalMoves, otherMark, play, winner, type Board, type Mark } from './rules';

const values = new Map<string, number>();

export function positionValue(board: Board, toMove: Mark): number {
	const result = winner(board);
	if (result === 'draw') return 0;
	if (result !== null) return result === toMove ? 1 : -1;
	const key = board.join('') + toMove;
	const known = values.get(key);
	if (known !== undefined) return known;
	let best = -1;
	for (const index of legalMoves(board)) {
		best = Math.max(best, 0 - positionValue(play(board, index, toMove), otherMark(toMove)));
		if (best === 1) break;
	}
	values.set(key, best);
	return best;
}

/** The moves that keep `mark`'s minimax value; empty for a finished board. */
export function perfectMoves(board: Board, mark: Mark): number[] {
	if (winner(board) !== null) return [];
	const scored = legalMoves(board).map((index) => ({
		index,
		value: 0 - positionValue(play(board, index, mark), otherMark(mark))
	}));
	const best = Math.max(...scored.map((s) => s.value));
	return scored.filter((s) => s.value === best).map((s) => s.index);
}
