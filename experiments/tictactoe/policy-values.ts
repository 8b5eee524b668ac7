/**
 * @file Exact expected scores (win 1, draw 0.5, loss 0) of simple tic-tac-toe policies
 * against the uniformly random opponent of tictactoe.ts, by enumerating every game (the
 * opponent's moves weighted 1 / its choices, ties among a policy's moves likewise). What a
 * learned policy's evaluation score means: random play 0.500, taking wins 0.705, taking wins
 * and blocking losses 0.880, the same preferring the centre 0.940, optimal play 0.980.
 *
 *   npx tsx experiments/tictactoe/policy-values.ts
 */
import {
	emptyBoard,
	legalMoves,
	otherMark,
	play,
	winner,
	type Board,
	type Mark
} from '../../src/lib/agent/envs/tictactoe/rules';

/** The moves a policy picks among (uniformly) on `board` as `me`. */
export type MoveSet = (board: Board, me: Mark) => number[];

const result = (b: Board, me: Mark): number | null => {
	const w = winner(b);
	return w === null ? null : w === 'draw' ? 0.5 : w === me ? 1 : 0;
};

/** Expected score of `policy` as `me` from `board` with `toMove` to play. */
export function policyValue(policy: MoveSet, me: Mark, board: Board = emptyBoard()): number {
	const value = (b: Board, toMove: Mark): number => {
		const r = result(b, me);
		if (r !== null) return r;
		const moves = toMove === me ? policy(b, me) : legalMoves(b);
		return (
			moves.reduce((s, m) => s + value(play(b, m, toMove), otherMark(toMove)), 0) / moves.length
		);
	};
	return value(board, 'x');
}

/** Expected score of the best policy against the random opponent (expectimax). */
export function optimalValue(me: Mark): number {
	const memo = new Map<string, number>();
	const value = (b: Board, toMove: Mark): number => {
		const key = b.join('') + toMove;
		const cached = memo.get(key);
		if (cached !== undefined) return cached;
		let v = result(b, me);
		if (v === null) {
			const next = legalMoves(b).map((m) => value(play(b, m, toMove), otherMark(toMove)));
			v = toMove === me ? Math.max(...next) : next.reduce((s, x) => s + x, 0) / next.length;
		}
		memo.set(key, v);
		return v;
	};
	return value(emptyBoard(), 'x');
}

const winningMoves = (b: Board, m: Mark) =>
	legalMoves(b).filter((i) => winner(play(b, i, m)) === m);

export const POLICIES: Record<string, MoveSet> = {
	random: (b) => legalMoves(b),
	'take wins': (b, me) => {
		const w = winningMoves(b, me);
		return w.length ? w : legalMoves(b);
	},
	'take wins, block losses': (b, me) => {
		for (const m of [me, otherMark(me)]) {
			const w = winningMoves(b, m);
			if (w.length) return w;
		}
		return legalMoves(b);
	},
	'take wins, block losses, centre': (b, me) => {
		const moves = POLICIES['take wins, block losses'](b, me);
		return moves.includes(4) ? [4] : moves;
	}
};

if (process.argv[1]?.endsWith('policy-values.ts')) {
	const row = (name: string, x: number, o: number) =>
		`| ${name} | ${x.toFixed(3)} | ${o.toFixed(3)} | ${((x + o) / 2).toFixed(3)} |`;
	const lines = ['| policy | as X | as O | mean |', '| --- | ---: | ---: | ---: |'];
	for (const [name, p] of Object.entries(POLICIES))
		lines.push(row(name, policyValue(p, 'x'), policyValue(p, 'o')));
	lines.push(row('optimal', optimalValue('x'), optimalValue('o')));
	process.stdout.write(lines.join('\n') + '\n');
}
