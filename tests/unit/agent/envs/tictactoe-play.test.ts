/**
 * Tic-tac-toe from outside a model (src/lib/agent/envs/tictactoe/policies.ts): the board read back
 * from its rendering, the legal random player through the real rollout, and the replay of a
 * finished game (boards between moves, the final board, the outcome) from the trajectory
 * alone, also after a JSONL round trip (what the page receives).
 */
import { describe, expect, it } from 'vitest';
import { trajectoryFromJson, trajectoryToJson } from '../../../../src/lib/agent/jsonl';
import { policyClient } from '../../../../src/lib/agent/policy-client';
import {
	legalRandomPolicy,
	play,
	emptyBoard,
	readBoard,
	renderBoard,
	replay,
	rollout
} from '../../../../src/lib/agent/envs/tictactoe/rollout';

describe('tic-tac-toe from outside', () => {
	it('reads back the board it renders, the last one in a text', () => {
		const board = play(play(emptyBoard(), 4, 'x'), 0, 'o');
		expect(readBoard(renderBoard(board))).toEqual(['o', '_', '_', '_', 'x', '_', '_', '_', '_']);
		expect(readBoard(renderBoard(emptyBoard()) + renderBoard(board))).toEqual([...board]);
		expect(readBoard('no board here')).toBeNull();
	});

	it('the random player plays legal games to the end; the replay shows each position', async () => {
		for (let seed = 0; seed < 20; seed++) {
			const t = await rollout(policyClient(legalRandomPolicy(seed)), { model: 'p', seed });
			expect(t.metadata.outcome).not.toBe('illegal');
			const items = replay(trajectoryFromJson(trajectoryToJson(t)));
			const boards = items.filter((i) => i.kind === 'board');
			// one board per agent move, then the final one
			expect(boards).toHaveLength(Number(t.metrics.num_moves) + 1);
			const last = boards.at(-1)!;
			expect(
				last.kind === 'board' &&
					last.rows
						.flat()
						.map((c) => c || '_')
						.join('')
			).toBe(t.metadata.final_board);
			expect(items.at(-1)).toEqual({
				kind: 'outcome',
				// the game's words, never "loss" (the update's term on the same page)
				text: `${{ win: 'won', loss: 'lost', draw: 'draw', illegal: 'illegal move' }[String(t.metadata.outcome)]} (playing ${t.metadata.agent_symbol})`,
				reward: t.reward
			});
		}
	});
});
