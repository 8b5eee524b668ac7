/**
 * @file A rule-following RULER judge for tic-tac-toe: it reads each trajectory as a judge
 * model would (the messages only) and scores the game's own reward mapped to [0, 1] as
 * (reward + 1) / 2. The outcome comes from the game-over message that ends every
 * trajectory; for an illegal move, the agent's legal moves before it are its marks on the
 * final board (its mark from the system prompt: in the trajectory, or in the shared context
 * when the whole group has the same one). Used by the run-loop test's twin and by
 * tools/rule-judge.ts (the RULER-vs-game-reward learning comparison on the GPU machine).
 */
import { illegalMoveReward, readBoard } from '../agent/envs/tictactoe/rollout';
import { ok, trajectoriesOf, type Behaviour } from './scripted-judge';

export const ticTacToeRule: Behaviour = (seen) => {
	const prompt = seen.body.messages[1].content;
	const scores = [...trajectoriesOf(seen)].map(([id, text]) => {
		const messages = JSON.parse(text) as { role: string; content: string }[];
		const over = messages.at(-1)!.content;
		const mark = (/tic-tac-toe as ([xo]) /.exec(text) ?? /tic-tac-toe as ([xo]) /.exec(prompt))![1];
		const outcome = /Game over: (you win|a draw|you lose)/.exec(over)![1];
		const moves = readBoard(over)!.filter((c) => c === mark).length;
		const reward = over.includes('illegal move')
			? illegalMoveReward(moves)
			: { 'you win': 1, 'a draw': 0.5, 'you lose': 0 }[outcome]!;
		return { trajectory_id: id, explanation: 'by rule', score: (reward + 1) / 2 };
	});
	return ok(JSON.stringify({ scores }));
};
