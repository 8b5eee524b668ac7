/**
 * @file Transcripts of legal play, for SFT before GRPO: each is the conversation
 * tictactoe.ts's rollout would have (its system prompt, the board as the user's turn, the
 * move as the assistant's `<move>B2</move>`), against the random opponent. By default the
 * agent chooses uniformly among the legal squares: imitating that teaches the move format
 * and the rules, not strategy (the shipped warm start), which GRPO then improves on. With
 * `skill` p each agent move is a perfect (minimax) one with probability p instead: a
 * stronger start, whose play as O holds more games.
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
import { perfectMoves } from './perfect';

/** One game of legal play as the agent's conversation (random, or perfect a share `skill` of
 * the agent's moves); reward win 1, draw 0.5, loss 0. Skill 0 draws exactly as before it
 * existed, so the shipped warm start's demonstrations stay the same. */
export function legalPlayTranscript(seed: number, skill = 0): Trajectory {
	if (!(skill >= 0 && skill <= 1)) throw new RangeError(`skill must be in [0, 1], not ${skill}`);
	const rng = new Rng(seed);
	const agent: Mark = rng.int(2) === 0 ? 'x' : 'o';
	const opponent = otherMark(agent);
	const t = new Trajectory({
		messagesAndChoices: [{ role: 'system', content: systemPrompt(agent) }],
		metadata: {
			environment: 'tic-tac-toe',
			seed,
			agent_symbol: agent,
			source: skill > 0 ? `perfect-share-${skill}` : 'random-legal'
		}
	});
	let board: Board = emptyBoard();
	const randomMove = () => {
		const moves = legalMoves(board);
		return moves[rng.int(moves.length)];
	};
	const agentMove = () => {
		if (skill === 0 || rng.next() >= skill) return randomMove();
		const best = perfectMoves(board, agent);
		return best[rng.int(best.length)];
	};
	if (agent === 'o') board = play(board, randomMove(), opponent);
	while (winner(board) === null) {
		t.messagesAndChoices.push({ role: 'user', content: renderBoard(board) });
		const move = agentMove();
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
export function legalPlayTranscripts(count: number, seed: number, skill = 0): Trajectory[] {
	return Array.from({ length: count }, (_, i) => legalPlayTranscript(seed * 1_000_003 + i, skill));
}
