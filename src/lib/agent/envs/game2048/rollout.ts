/**
 * @file The 2048 environment: `rollout(client, options)` plays one game through an OpenAI
 * client (the local `openaiClient()`, a scripted `policyClient`, or any other) and returns
 * its Trajectory. As ART's example (OpenPipe/ART examples/2048/rollout.py, utils.py):
 *
 * - ART's system prompt, word for word; each turn the board is a user message
 *   (renderBoard) and the model's reply a choice, appended to the trajectory;
 * - the reply must be `<move>DIR</move>` (rules.ts parseMove); anything else ends the game
 *   with reward -1;
 * - after each accepted move a tile spawns (even when the move changed nothing), then the
 *   game ends on a win (max >= W) or a full board, with ART's reward (rules.ts reward);
 * - `onInvalidReply: 'random-move'` (ours, for timing stand-ins): an invalid reply is replaced
 *   by a random move (its own seeded generator), counted in `replaced_moves`;
 * - metrics `max_value`, `board_value`, `num_moves` (accepted moves), `win` (0/1) and
 *   `history_turns` (the window, -1 for the whole history); max_completion_tokens 128.
 *
 * The history window: `historyTurns: null` (ART) sends the whole game each turn, one growing
 * conversation, the trajectory's main history. `historyTurns: K` sends the system prompt,
 * the last K (board, reply) pairs and the current board. While the window still holds the
 * whole game (turn <= K) each request continues the last and the turn is appended to the
 * main history; after that each request is a conversation of its own, recorded as an
 * additional history of exactly the messages sent (earlier replies as plain assistant
 * messages, context) and the turn's choice, so training and SFT see what the model saw and
 * every choice once.
 *
 * Randomness is seeded: one generator, from `seed`, draws the two starting tiles and then
 * every spawn, so a seed fixes the game up to the model's replies (the model's sampling has
 * its own `seed` in `request`; turn t samples with seed + t, as tictactoe.ts).
 */
import type OpenAI from 'openai';
import { Rng } from '../../../util/random';
import { isContextLimit } from '../../context-limit';
import type { InvalidReplyRule } from '../environment';
import { turnRequest, type RequestExtras } from '../turn-request';
import {
	choiceToMessage,
	historyMessages,
	Trajectory,
	type Message,
	type MessageOrChoice
} from '../../trajectory';
import {
	applyMove,
	boardValue,
	checkWinningValue,
	DEFAULT_WINNING_VALUE,
	DIRECTIONS,
	finished,
	INVALID_REWARD,
	maxValue,
	newBoard,
	parseMove,
	renderBoard,
	reward,
	spawn,
	type Board
} from './rules';

export type { RequestExtras } from '../turn-request';

/**
 * The system prompt, verbatim from ART: OpenPipe/ART examples/2048/rollout.py (and the
 * 2048.ipynb notebook's rollout cell), the first message of every trajectory. It names 2048
 * as the goal whatever the winning value; the words are ART's, kept as the model reads them.
 */
export const SYSTEM_PROMPT =
	'You are an excellent 2048 player. Always choose the move most likely to lead to combine ' +
	'cells to eventually reach the number 2048. Optional moves are ' +
	"'left', 'right', 'up', 'down'. Return your move as an XML object with a single property " +
	"'move', like so: <move>left</move>";

/**
 * 'context': the history outgrew the model's context window; 'limit': the move limit was
 * reached (both end the game there, scored as it stands).
 */
export type Outcome = 'win' | 'full' | 'invalid' | 'context' | 'limit';

export interface Game2048Options {
	/** The model name sent with each request. */
	model: string;
	/** Seeds the starting tiles and every spawn. */
	seed: number;
	/** The tile that wins; a power of two >= 4. Default 128 (ART's utils.py). */
	winningValue?: number;
	/** The last K (board, reply) pairs sent each turn; null (default, ART) sends them all. */
	historyTurns?: number | null;
	/** max_completion_tokens of each reply. Default 128 (ART). */
	maxTokens?: number;
	/**
	 * Moves at most; a game stopped there is scored as it stands, not a win. Default none
	 * (ART): a game goes on until it is won or the board is full. A small device's way to
	 * keep a target the policy does not always reach within a short game.
	 */
	maxMoves?: number | null;
	/** An invalid reply ends the game (default, ART's) or is replaced by a random move
	 * (EnvOptions.onInvalidReply: a timing stand-in's games last as long as real ones). */
	onInvalidReply?: InvalidReplyRule;
	request?: RequestExtras;
	signal?: AbortSignal;
}

/** Plays one game; the trajectory's reward, metrics, metadata and logs say how it went. */
export async function rollout(client: OpenAI, options: Game2048Options): Promise<Trajectory> {
	const {
		model,
		seed,
		winningValue = DEFAULT_WINNING_VALUE,
		historyTurns = null,
		maxTokens = 128,
		maxMoves = null,
		request = {},
		signal
	} = options;
	checkWinningValue(winningValue);
	if (maxMoves !== null && !(Number.isInteger(maxMoves) && maxMoves >= 1))
		throw new RangeError(`maxMoves must be null or an integer >= 1, not ${maxMoves}`);
	if (historyTurns !== null && !(Number.isInteger(historyTurns) && historyTurns >= 0))
		throw new RangeError(`historyTurns must be null or an integer >= 0, not ${historyTurns}`);

	const rng = new Rng(seed);
	let board: Board = newBoard(rng);
	const replace = options.onInvalidReply === 'random-move';
	// its own generator: a replaced move leaves the spawns as the seed gives them
	const replacements = new Rng(seed ^ 0x5bd1e995);
	let replaced = 0;
	const system: Message = { role: 'system', content: SYSTEM_PROMPT };
	const trajectory = new Trajectory({
		messagesAndChoices: [system],
		metadata: {
			environment: '2048',
			seed,
			winning_value: winningValue,
			max_moves: maxMoves ?? -1,
			history_turns: historyTurns ?? -1
		}
	});

	/** Every turn so far: the board sent and the reply, as the next requests resend them. */
	const past: Message[][] = [];
	/** The history this turn's request continues (the main one until the window slides). */
	let current: MessageOrChoice[] = trajectory.messagesAndChoices;
	let moves = 0;
	let outcome: Outcome;
	for (let turn = 0; ; turn++) {
		const user: Message = { role: 'user', content: renderBoard(board) };
		let messages: Message[];
		if (historyTurns === null || turn <= historyTurns) {
			current.push(user);
			messages = historyMessages(current);
		} else {
			messages = [system, ...past.slice(past.length - historyTurns).flat(), user];
			current = [...messages];
			trajectory.additionalHistories.push({ messagesAndChoices: current });
		}
		let completion;
		try {
			completion = await client.chat.completions.create(
				{
					...turnRequest(request, turn),
					model,
					messages,
					max_completion_tokens: maxTokens
				},
				{ signal }
			);
		} catch (error) {
			if (!isContextLimit(error)) throw error;
			// The history outgrew the model's window: the game ends here, scored as it stands
			// (not the model's fault: no penalty), the unanswered board left out.
			if (current === trajectory.messagesAndChoices) current.pop();
			else trajectory.additionalHistories.pop(); // (this turn's history: its board alone)
			outcome = 'context';
			trajectory.reward = reward(board, winningValue, false);
			trajectory.log(`the history no longer fits the context window after ${moves} moves`);
			break;
		}
		const choice = completion.choices[0];
		current.push(choice);
		past.push([user, choiceToMessage(choice)]);

		const reply = choice.message.content ?? '';
		const parsed = parseMove(reply);
		let move = parsed;
		if (!parsed.ok && replace) {
			const direction = DIRECTIONS[replacements.int(DIRECTIONS.length)];
			replaced++;
			trajectory.log(`invalid reply (${parsed.problem}) replaced by ${direction}`);
			move = { ok: true, direction };
		}
		if (!move.ok) {
			outcome = 'invalid';
			trajectory.reward = INVALID_REWARD;
			trajectory.log(`invalid reply (${move.problem}: ${move.detail}): ${JSON.stringify(reply)}`);
			break;
		}
		const { board: slid, changed } = applyMove(board, move.direction);
		board = spawn(slid, rng);
		moves++;
		trajectory.log(`move ${moves}: ${move.direction}${changed ? '' : ' (no change)'}`);
		if (finished(board, winningValue)) {
			outcome = maxValue(board) >= winningValue ? 'win' : 'full';
			trajectory.reward = reward(board, winningValue, outcome === 'win');
			trajectory.log(
				outcome === 'win'
					? `won: ${maxValue(board)} reached in ${moves} moves`
					: `board full, max ${maxValue(board)}`
			);
			break;
		}
		if (moves === maxMoves) {
			outcome = 'limit';
			trajectory.reward = reward(board, winningValue, false);
			trajectory.log(`stopped at the move limit (${moves} moves), max ${maxValue(board)}`);
			break;
		}
	}

	trajectory.metrics.max_value = maxValue(board);
	trajectory.metrics.board_value = boardValue(board);
	trajectory.metrics.num_moves = moves;
	trajectory.metrics.win = outcome === 'win' ? 1 : 0;
	trajectory.metrics.history_turns = historyTurns ?? -1;
	if (replace) trajectory.metrics.replaced_moves = replaced;
	trajectory.metadata.outcome = outcome;
	trajectory.metadata.final_board = JSON.stringify(board);
	return trajectory;
}
