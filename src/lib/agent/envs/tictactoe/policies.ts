/**
 * @file Tic-tac-toe seen from outside a model: scripted players and the replay of a game.
 *
 * - `readBoard(text)`: the last board rendered in `text` (renderBoard's layout) back into
 *   cells, so a scripted player sees exactly what the model sees.
 * - `legalRandomPolicy(seed)`: a uniformly random empty square: `cli play`'s `random`.
 * - `perfectPolicy(seed)`: a minimax move, a random one of the equally good (perfect.ts):
 *   `cli play`'s and the page's `expert`, the player whose moves the shipped warm start
 *   imitates (its demonstrations: demonstrations.ts with skill 1).
 * - `replay(trajectory)`: the boards between the agent's moves, from the trajectory alone.
 */
import type { Policy } from '../../policy-client';
import type { ReplayItem } from '../replay';
import { isChoice, type Trajectory } from '../../trajectory';
import { perfectMoves } from './perfect';
import { legalMoves, squareName, SIZE, type Cell } from './rules';
import { Rng } from '../../../util/random';

const HEADER = '   ' + Array.from({ length: SIZE }, (_, c) => c + 1).join('   ') + '\n';

/** The cells of the last board rendered in `text`; null when there is none. */
export function readBoard(text: string): Cell[] | null {
	const at = text.lastIndexOf(HEADER);
	if (at < 0) return null;
	const rows = text
		.slice(at + HEADER.length)
		.split('\n')
		.slice(0, SIZE);
	const cells = rows.flatMap((row) => row.slice(3).split(' | ')) as Cell[];
	return cells.length === SIZE * SIZE && cells.every((c) => c === 'x' || c === 'o' || c === '_')
		? cells
		: null;
}

const lastUserText = (messages: Parameters<Policy>[0]['messages']) => {
	for (let i = messages.length - 1; i >= 0; i--)
		if (messages[i].role === 'user') return String(messages[i].content ?? '');
	return '';
};

/** A player of the board in the last user message: one of `choices(board)` at random (its
 * own generator, from `seed`), as `<move>B2</move>`; an empty reply when there is none. */
function boardPolicy(seed: number, choices: (board: Cell[]) => number[]): Policy {
	const rng = new Rng(seed);
	return ({ messages }) => {
		const board = readBoard(lastUserText(messages));
		const moves = board ? choices(board) : [];
		if (!moves.length) return { content: '' };
		return { content: `<move>${squareName(moves[rng.int(moves.length)])}</move>` };
	};
}

/** A uniformly random legal move. */
export const legalRandomPolicy = (seed: number): Policy => boardPolicy(seed, legalMoves);

/** A perfect move: minimax's best for the mark to move (x moves first, so it is x's turn when
 * the marks are even), a random one of the equally good. */
export const perfectPolicy = (seed: number): Policy =>
	boardPolicy(seed, (board) => {
		const count = (m: Cell) => board.filter((c) => c === m).length;
		return perfectMoves(board, count('x') === count('o') ? 'x' : 'o');
	});

const rowsOf = (cells: readonly Cell[]) =>
	Array.from({ length: SIZE }, (_, r) =>
		cells.slice(r * SIZE, (r + 1) * SIZE).map((c) => (c === '_' ? '' : c))
	);

/** How a game ended, in words that are not the training's terms ("loss" is the update's). */
export const OUTCOME_WORDS: Record<string, string> = {
	win: 'won',
	loss: 'lost',
	draw: 'draw',
	illegal: 'illegal move'
};

/** Rows A-C and columns 1-3: the names moves give squares (squareName: 'B2' is the centre). */
const SQUARE_LABELS = {
	rows: Array.from({ length: SIZE }, (_, r) => squareName(r * SIZE)[0]),
	cols: Array.from({ length: SIZE }, (_, c) => String(c + 1))
};

/** The boards the agent was shown, each with its reply, then the final board and outcome. */
export function replay(trajectory: Trajectory): ReplayItem[] {
	const items: ReplayItem[] = [];
	const turns = trajectory.messagesAndChoices;
	turns.forEach((item, i) => {
		if (isChoice(item) || item.role !== 'user') return;
		const next = turns[i + 1];
		// the game-over message has no reply; its board is the final one, shown below
		if (!next || !isChoice(next)) return;
		const board = readBoard(String(item.content ?? ''));
		if (board)
			items.push({
				kind: 'board',
				rows: rowsOf(board),
				caption: `agent: ${next.message.content ?? ''}`,
				labels: SQUARE_LABELS
			});
	});
	const final = String(trajectory.metadata.final_board ?? '');
	if (final.length === SIZE * SIZE)
		items.push({
			kind: 'board',
			rows: rowsOf([...final] as Cell[]),
			caption: 'final board',
			labels: SQUARE_LABELS
		});
	const outcome = String(trajectory.metadata.outcome ?? 'unfinished');
	const mark = String(trajectory.metadata.agent_symbol ?? '?');
	const text = `${OUTCOME_WORDS[outcome] ?? outcome} (playing ${mark})`;
	items.push({ kind: 'outcome', text, reward: trajectory.reward });
	return items;
}
