/**
 * @file A rule-following RULER judge for tic-tac-toe: reads each trajectory's messages as a
 * judge model would and scores the game's reward as (reward + 1) / 2, the outcome from the
 * closing game-over message (an illegal move: the agent's marks on the final board). Used
 * by the run-loop test's twin and tools/rule-judge.ts.
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
