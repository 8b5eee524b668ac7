/**
 * @file Transcripts of legal random play, for SFT before GRPO: each is the conversation
 * tictactoe.ts's rollout would have (its system prompt, the board as the user's turn, the
 * move as the assistant's `<move>B2</move>`), with the agent choosing uniformly among the
 * legal squares against the same random opponent. Imitating them teaches a model the move
 * format and the rules, not strategy: their score is that of random play, which GRPO then
 * improves on.
 */
import { Rng } from '../../../util/random';
import {
	emptyBoard,
	legalMoves,
	otherMark,
	play,
	renderBoard,
	REWARD,
	squareName,
	systemPrompt,
	winner,
	type Board,
	type Mark
} from './rollout';
import { Trajectory } from '../../trajectory';

/** One game of random legal play as the agent's conversation; reward win 1, draw 0.5, loss 0. */
export function legalPlayTranscript(seed: number): Trajectory {
	const rng = new Rng(seed);
	const agent: Mark = rng.int(2) === 0 ? 'x' : 'o';
	const opponent = otherMark(agent);
	const t = new Trajectory({
		messagesAndChoices: [{ role: 'system', content: systemPrompt(agent) }],
		metadata: { environment: 'tic-tac-toe', seed, agent_symbol: agent, source: 'random-legal' }
	});
	let board: Board = emptyBoard();
	const randomMove = () => {
		const moves = legalMoves(board);
		return moves[rng.int(moves.length)];
	};
	if (agent === 'o') board = play(board, randomMove(), opponent);
	while (winner(board) === null) {
		t.messagesAndChoices.push({ role: 'user', content: renderBoard(board) });
		const move = randomMove();
		t.messagesAndChoices.push({ role: 'assistant', content: `<move>${squareName(move)}</move>` });
		board = play(board, move, agent);
		if (winner(board) !== null) break;
		board = play(board, randomMove(), opponent);
	}
	const result = winner(board);
	t.reward = result === 'draw' ? REWARD.draw : result === agent ? REWARD.win : REWARD.loss;
	return t;
}

/** `count` transcripts from seeds seed * 1_000_003 + i (disjoint runs for distinct seeds). */
export function legalPlayTranscripts(count: number, seed: number): Trajectory[] {
	return Array.from({ length: count }, (_, i) => legalPlayTranscript(seed * 1_000_003 + i));
}
