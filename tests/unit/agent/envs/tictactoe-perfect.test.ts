/**
 * The perfect tic-tac-toe player (src/lib/agent/envs/tictactoe/perfect.ts), against positions
 * whose values are known by hand: the empty board is a draw, every first move keeps it, a
 * corner opening must be answered in the centre, a win is taken and a threat blocked; two
 * perfect players always draw, and through the real rollout a random agent never beats one;
 * the mixed opponent (minimax or random, even odds a move) lies between the two.
 */
import { describe, expect, it } from 'vitest';
import { policyClient } from '../../../../src/lib/agent/policy-client';
import { perfectMoves, positionValue } from '../../../../src/lib/agent/envs/tictactoe/perfect';
import {
	emptyBoard,
	legalRandomPolicy,
	otherMark,
	play,
	rollout,
	winner,
	type Board,
	type Mark
} from '../../../../src/lib/agent/envs/tictactoe/rollout';
import { Rng } from '../../../../src/lib/util/random';

const board = (rows: string): Board => rows.replace(/\s/g, '').split('') as Board;

describe('perfect tic-tac-toe', () => {
	it('values positions as minimax does', () => {
		expect(positionValue(emptyBoard(), 'x')).toBe(0);
		// x to move with two in a row wins; o to move there wins too (its own row)
		expect(positionValue(board('xx_ oo_ ___'), 'x')).toBe(1);
		expect(positionValue(board('xx_ oo_ ___'), 'o')).toBe(1);
		// a fork: x threatens A3 and C1 at once, o to move loses
		expect(positionValue(board('x_x _o_ x_o'), 'o')).toBe(-1);
		// finished boards: their result for the side to move
		expect(positionValue(board('xxx oo_ ___'), 'o')).toBe(-1);
		expect(positionValue(board('xox xoo oxx'), 'x')).toBe(0);
	});

	it('keeps the value: any opening, the centre against a corner, wins taken, threats blocked', () => {
		expect(perfectMoves(emptyBoard(), 'x')).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
		expect(perfectMoves(board('x__ ___ ___'), 'o')).toEqual([4]);
		expect(perfectMoves(board('xx_ oo_ ___'), 'x')).toEqual([2]);
		expect(perfectMoves(board('xx_ _o_ ___'), 'o')).toEqual([2]);
		expect(perfectMoves(board('xxx oo_ ___'), 'o')).toEqual([]);
	});

	it('two perfect players always draw', () => {
		const rng = new Rng(3);
		for (let game = 0; game < 40; game++) {
			let b: Board = emptyBoard();
			let mark: Mark = 'x';
			while (winner(b) === null) {
				const moves = perfectMoves(b, mark);
				b = play(b, moves[rng.int(moves.length)], mark);
				mark = otherMark(mark);
			}
			expect(winner(b)).toBe('draw');
		}
	});

	it('as the rollout opponent: a random agent never wins, and the game says who it played', async () => {
		const outcomes = new Set<unknown>();
		for (let seed = 0; seed < 60; seed++) {
			const t = await rollout(policyClient(legalRandomPolicy(seed)), {
				model: 'p',
				seed,
				opponent: 'perfect'
			});
			expect(t.metadata.outcome).not.toBe('win');
			expect(t.metadata.opponent).toBe('perfect');
			outcomes.add(t.metadata.outcome);
		}
		expect(outcomes).toEqual(new Set(['loss', 'draw']));
		const vsRandom = await rollout(policyClient(legalRandomPolicy(0)), { model: 'p', seed: 0 });
		expect(vsRandom.metadata.opponent).toBeUndefined();
	});

	it('the mixed opponent: a random agent wins against it less often than against random, more than against minimax', async () => {
		const winRate = async (opponent: 'random' | 'mixed' | 'perfect') => {
			let wins = 0;
			for (let seed = 0; seed < 300; seed++) {
				const t = await rollout(policyClient(legalRandomPolicy(seed)), {
					model: 'p',
					seed,
					opponent
				});
				if (opponent === 'mixed') expect(t.metadata.opponent).toBe('mixed');
				if (t.metadata.outcome === 'win') wins++;
			}
			return wins / 300;
		};
		const [random, mixed, perfect] = [
			await winRate('random'),
			await winRate('mixed'),
			await winRate('perfect')
		];
		// these 300 seeds: 0.36 against random, 0.19 against mixed, 0 against minimax
		expect(random).toBeGreaterThan(0.3);
		expect(perfect).toBe(0);
		expect(mixed).toBeGreaterThan(0.03);
		expect(mixed).toBeLessThan(random - 0.1);
	});
});
