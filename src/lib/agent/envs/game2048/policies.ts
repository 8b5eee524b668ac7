/**
 * @file Scripted 2048 players, as `Policy`s for `policyClient` (policy-client.ts), so they
 * play through rollout.ts exactly as a model does: `randomPolicy` (a baseline),
 * `expertPolicy` (the demonstrations an SFT warm start imitates) and `orderPolicy` (a
 * fixed preference order, simpler and weaker).
 *
 * Both scripted players read only what the model reads, the board in the last user
 * message, and look one move ahead. The expert plays the corner strategy: of the moves that
 * change the board, one that leaves the largest tile in the bottom-left corner; among
 * those, the one that leaves the most empty cells; then the first of down, left, right, up.
 * (Opposite moves free the same number of cells, so "most empty cells" only ever chooses
 * between down and left.) ART's game ends as soon as the board is full, merges possible or
 * not, so freeing cells matters more than in the usual game.
 *
 * Measured over 2000 games through rollout.ts (seeds 0..1999, historyTurns 0), win rates:
 *
 *     winning value                             64      128     256
 *     randomPolicy(seed)                      0.599   0.114   0.001
 *     orderPolicy() (down, left, right, up)   0.963   0.734   0.209
 *     expertPolicy()                          0.989   0.913   0.540
 *
 * Others tried, at W = 128: order down, right, left, up 0.730; left, down, right, up 0.568;
 * the most empty cells, ties by down, left, right, up (no corner) 0.855; the corner as a
 * bonus of 1 empty cell 0.898. Only the corner rule reached 0.9.
 */
import { Rng } from '../../../util/random';
import type { Policy, PolicyRequest } from '../../policy-client';
import { applyMove, DIRECTIONS, maxValue, parseBoard, type Board, type Direction } from './rules';

/** The fixed preference of orderPolicy, and the expert's tie-break. */
export const CORNER_ORDER: readonly Direction[] = ['down', 'left', 'right', 'up'];

/** The reply that plays `direction`, as the rules require it. */
export function moveReply(direction: Direction): { content: string } {
	return { content: `<move>${direction}</move>` };
}

/** The board of the request's last user message; throws if there is none. */
export function lastBoard(request: PolicyRequest): number[] {
	for (let i = request.messages.length - 1; i >= 0; i--) {
		const m = request.messages[i];
		if (m.role !== 'user') continue;
		const board = typeof m.content === 'string' ? parseBoard(m.content) : null;
		if (!board) throw new Error(`The last user message is not a 2048 board: ${String(m.content)}`);
		return board;
	}
	throw new Error('The request has no user message (no board to play on)');
}

/** Uniform over the four directions (no-op moves included), from its own Rng(seed). */
export function randomPolicy(seed: number): Policy {
	const rng = new Rng(seed);
	return () => moveReply(DIRECTIONS[rng.int(DIRECTIONS.length)]);
}

/** The first of `order` that changes the board (the last of them if none does). */
export function orderPolicy(order: readonly Direction[] = CORNER_ORDER): Policy {
	return (request) => {
		const board = lastBoard(request);
		return moveReply(order.find((d) => applyMove(board, d).changed) ?? order[order.length - 1]);
	};
}

/** The expert's move on `board` (see the file's comment); 'up' if no move changes it. */
export function expertMove(board: Board): Direction {
	let best: Direction = 'up';
	let bestKey = -Infinity;
	for (const d of CORNER_ORDER) {
		const { board: next, changed } = applyMove(board, d);
		if (!changed) continue;
		const corner = next[12] === maxValue(next) ? 1 : 0;
		const empty = next.filter((v) => v === 0).length;
		// corner first, then empty cells (at most 16); strict > keeps the earlier direction.
		const key = 100 * corner + empty;
		if (key > bestKey) {
			bestKey = key;
			best = d;
		}
	}
	return best;
}

/** The corner strategy of the file's comment, on the board of the last user message. */
export function expertPolicy(): Policy {
	return (request) => moveReply(expertMove(lastBoard(request)));
}
