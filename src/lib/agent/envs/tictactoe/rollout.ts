/**
 * @file The tic-tac-toe environment: `rollout(client, options)` plays one game through an
 * OpenAI client (the local `openaiClient()` or any other) and returns its Trajectory. As
 * ART's example rollout (OpenPipe/ART examples/tic_tac_toe/tic-tac-toe.ipynb, rollout.py):
 *
 * - the agent is 'x' or 'o' at random; 'x' moves first, so as 'o' the opponent has
 *   already played when the agent first sees the board;
 * - the system prompt (our wording of what ART's asks: play to win, answer with the move
 *   as `<move>A1</move>`, squares named row letter + column digit, which mark is yours); each turn the board is a user message (renderBoard) and
 *   the model's reply a choice — trained — appended to the trajectory;
 * - the opponent plays a uniformly random empty square (ART's); `opponent: 'perfect'` (ours, for
 *   evaluation) plays a minimax move instead, a random one of the equally good (perfect.ts);
 * - win 1, draw 0.5, loss 0; an illegal or unparsable reply ends the game with
 *   -1 + ln(n + 1) / ln(100), n the agent's legal moves before it (tictactoe-game.ts);
 * - metrics `win` (1, 0.5 or 0, when the game was finished), `num_moves` (the agent's legal
 *   moves) and `invalid_move` (0 or 1); max_completion_tokens 128 by default;
 * - `onInvalidReply: 'random-move'` (ours, for timing stand-ins): an invalid reply is replaced
 *   by a random legal move (its own seeded generator) and the game goes on; `replaced_moves`
 *   counts them and the game is scored as it ends;
 * - our addition: the game ends with a user message that nobody answers (gameOverMessage: the
 *   final board and the outcome in words). A judge that reads only the trajectory (RULER)
 *   needs it: the agent's last move hides the opponent's winning reply or the draw after it.
 *   It adds no trained token nor any prompt a model is asked to answer.
 *
 * Randomness is seeded: one generator, from `seed`, draws the agent's mark and then each
 * opponent move, so a seed fixes the game up to the model's replies (the model's sampling
 * has its own `seed` in `request`; turn t of the game samples with seed + t, since one seed
 * on every turn would give each turn the same random draws).
 */
import type OpenAI from 'openai';
import { Rng } from '../../../util/random';
import { Trajectory } from '../../trajectory';
import { turnRequest, type RequestExtras } from '../turn-request';
import type { InvalidReplyRule } from '../environment';
import {
	REWARD,
	checkMove,
	emptyBoard,
	illegalMoveReward,
	legalMoves,
	otherMark,
	play,
	renderBoard,
	squareName,
	winner,
	type Board,
	type Mark
} from './rules';
import { perfectMoves } from './perfect';

export * from './rules';

/** The system prompt for the agent playing `mark`. */
export function systemPrompt(mark: Mark): string {
	return (
		`You play tic-tac-toe as ${mark} against an opponent, and you play to win. ` +
		'Squares are named by row letter and column number (A1 is the top left, C3 the bottom ' +
		'right). Reply with your move only, inside a move tag, for example <move>B2</move>.'
	);
}

export type { RequestExtras } from '../turn-request';

export interface TicTacToeOptions {
	/** The model name sent with each request. */
	model: string;
	/** Seeds the agent's mark and the opponent's moves. */
	seed: number;
	/** The agent's mark, instead of the seed's draw (the opponent's moves stay the seed's). */
	mark?: Mark;
	/** Who the opponent is: a random player (default, ART's) or a perfect one. */
	opponent?: OpponentKind;
	/** max_completion_tokens of each reply. Default 128 (ART). */
	maxTokens?: number;
	/** Parse replies strictly, as ART (default), or take the last <move> anywhere. */
	strict?: boolean;
	/** An invalid reply ends the game (default, ART's) or is replaced by a random legal move
	 * (EnvOptions.onInvalidReply: a timing stand-in's games last as long as real ones). */
	onInvalidReply?: InvalidReplyRule;
	request?: RequestExtras;
	signal?: AbortSignal;
}

export type Outcome = 'win' | 'loss' | 'draw' | 'illegal';

/**
 * The opponents: uniformly random legal moves (ART's), perfect play (minimax), or mixed: each
 * move minimax's or random with even odds (a curriculum between them: its threats must be
 * blocked, yet it leaves wins to take).
 */
export const OPPONENT_KINDS = ['random', 'perfect', 'mixed'] as const;
export type OpponentKind = (typeof OPPONENT_KINDS)[number];

export const isOpponentKind = (x: unknown): x is OpponentKind =>
	OPPONENT_KINDS.includes(x as OpponentKind);

const OUTCOME_WORDS: Record<Outcome, string> = {
	win: 'you win.',
	loss: 'you lose.',
	draw: 'a draw.',
	illegal: 'you lose by an illegal move.'
};

/** The message that closes a game: the board as it ended, then `Game over: <outcome>`. */
export function gameOverMessage(board: Board, outcome: Outcome, illegal?: string): string {
	const why = outcome === 'illegal' && illegal ? `That move is not allowed: ${illegal}.\n` : '';
	return `${renderBoard(board)}${why}Game over: ${OUTCOME_WORDS[outcome]}`;
}

/**
 * The opponent's move: a uniformly random square of its choices (ART's random.choice). A
 * random opponent draws once a move, as before 'mixed' existed, so its games stay the same.
 */
function opponentMove(board: Board, rng: Rng, kind: OpponentKind, mark: Mark): number {
	const perfect = kind === 'perfect' || (kind === 'mixed' && rng.int(2) === 0);
	const moves = perfect ? perfectMoves(board, mark) : legalMoves(board);
	return moves[rng.int(moves.length)];
}

/** Plays one game; the trajectory's reward, metrics and logs say how it went. */
export async function rollout(client: OpenAI, options: TicTacToeOptions): Promise<Trajectory> {
	const { model, seed, maxTokens = 128, strict = true, request = {}, signal } = options;
	const replace = options.onInvalidReply === 'random-move';
	// its own generator: a replaced move leaves the opponent's draws as the seed gives them
	const replacements = new Rng(seed ^ 0x5bd1e995);
	let replaced = 0;
	const opponentKind = options.opponent ?? 'random';
	const rng = new Rng(seed);
	const drawn: Mark = rng.int(2) === 0 ? 'x' : 'o';
	const agent = options.mark ?? drawn;
	const opponent = otherMark(agent);
	const trajectory = new Trajectory({
		messagesAndChoices: [{ role: 'system', content: systemPrompt(agent) }],
		metadata: {
			environment: 'tic-tac-toe',
			seed,
			agent_symbol: agent,
			...(opponentKind === 'random' ? {} : { opponent: opponentKind })
		}
	});

	let board: Board = emptyBoard();
	const opponentPlays = () => {
		const index = opponentMove(board, rng, opponentKind, opponent);
		board = play(board, index, opponent);
		trajectory.log(`opponent (${opponent}) plays ${squareName(index)}`);
	};
	if (agent === 'o') opponentPlays();

	let moves = 0;
	let invalid = false;
	let problem = '';
	while (winner(board) === null) {
		trajectory.messagesAndChoices.push({ role: 'user', content: renderBoard(board) });
		const completion = await client.chat.completions.create(
			{
				...turnRequest(request, moves),
				model,
				messages: trajectory.messages(),
				max_completion_tokens: maxTokens
			},
			{ signal }
		);
		const choice = completion.choices[0];
		trajectory.messagesAndChoices.push(choice);
		const reply = choice.message.content ?? '';
		const move = checkMove(board, reply, { strict });
		let index: number;
		if (move.ok) index = move.index;
		else if (replace) {
			const legal = legalMoves(board);
			index = legal[replacements.int(legal.length)];
			replaced++;
			trajectory.log(`invalid reply (${move.problem}) replaced by ${squareName(index)}`);
		} else {
			invalid = true;
			problem = move.detail;
			trajectory.reward = illegalMoveReward(moves);
			trajectory.log(`illegal move (${move.problem}: ${move.detail}): ${JSON.stringify(reply)}`);
			break;
		}
		board = play(board, index, agent);
		moves++;
		trajectory.log(`agent (${agent}) plays ${squareName(index)}`);
		if (winner(board) !== null) break;
		opponentPlays();
	}

	const result = winner(board);
	let outcome: Outcome = 'illegal';
	if (!invalid && result !== null) {
		outcome = result === 'draw' ? 'draw' : result === agent ? 'win' : 'loss';
		trajectory.reward = REWARD[outcome];
		trajectory.metrics.win = trajectory.reward;
	}
	trajectory.messagesAndChoices.push({
		role: 'user',
		content: gameOverMessage(board, outcome, problem)
	});
	trajectory.metrics.num_moves = moves;
	trajectory.metrics.invalid_move = invalid ? 1 : 0;
	if (replace) trajectory.metrics.replaced_moves = replaced;
	trajectory.metadata.outcome = outcome;
	trajectory.metadata.final_board = board.join('');
	return trajectory;
}

export { legalRandomPolicy, readBoard, replay } from './policies';
