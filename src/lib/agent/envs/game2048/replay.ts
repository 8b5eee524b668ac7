/**
 * @file A 2048 rollout as the studio draws it (replay.ts's ReplayItem), from the trajectory
 * alone: each turn's board (the user message just before each choice, in the main history
 * and then in each additional one, so a history window's resent boards are not repeated),
 * captioned with the move that led to it; the final board (metadata.final_board); and the
 * outcome with the reward.
 */
import type { ReplayItem } from '../replay';
import { isChoice, type Trajectory } from '../../trajectory';
import { parseBoard, parseMove, SIZE } from './rules';

/** The board as replay rows of cell text, '' for empty. */
function rows(board: readonly number[]): string[][] {
	return Array.from({ length: SIZE }, (_, r) =>
		board.slice(SIZE * r, SIZE * (r + 1)).map((v) => (v === 0 ? '' : String(v)))
	);
}

function finalBoard(value: unknown): number[] | null {
	if (typeof value !== 'string') return null;
	try {
		const board: unknown = JSON.parse(value);
		return Array.isArray(board) &&
			board.length === SIZE * SIZE &&
			board.every((v) => typeof v === 'number')
			? (board as number[])
			: null;
	} catch {
		return null;
	}
}

/** What a reply says, shortened for a caption. */
function quote(text: string): string {
	return JSON.stringify(text.length > 80 ? `${text.slice(0, 77)}...` : text);
}

/** The boards between moves, the final board and the outcome of a 2048 trajectory. */
export function replay(trajectory: Trajectory): ReplayItem[] {
	const items: ReplayItem[] = [];
	const replies: string[] = [];
	for (const history of trajectory.histories()) {
		const list = history.messagesAndChoices;
		list.forEach((item, i) => {
			const before = list[i - 1];
			if (!isChoice(item) || before === undefined || isChoice(before) || before.role !== 'user')
				return;
			const board = typeof before.content === 'string' ? parseBoard(before.content) : null;
			if (board) {
				const last = replies.length ? parseMove(replies[replies.length - 1]) : null;
				const caption =
					last === null ? 'start' : `move ${replies.length}: ${last.ok ? last.direction : '?'}`;
				items.push({ kind: 'board', rows: rows(board), caption });
			}
			replies.push(item.message.content ?? '');
		});
	}

	const outcome = trajectory.metadata.outcome;
	const moves = Number(trajectory.metrics.num_moves ?? 0);
	const final = finalBoard(trajectory.metadata.final_board);
	const lastReply = replies.length ? replies[replies.length - 1] : '';
	if (final && outcome !== 'invalid') {
		const last = parseMove(lastReply);
		items.push({
			kind: 'board',
			rows: rows(final),
			caption: `move ${moves}: ${last.ok ? last.direction : '?'} (final)`
		});
	}
	const max = final ? Math.max(...final) : Number(trajectory.metrics.max_value ?? 0);
	let text: string;
	if (outcome === 'win') text = `won: ${max} reached in ${moves} moves`;
	else if (outcome === 'full') text = `board full, max ${max}, after ${moves} moves`;
	else if (outcome === 'invalid') text = `invalid reply after ${moves} moves: ${quote(lastReply)}`;
	else if (outcome === 'limit') text = `stopped at the move limit (${moves} moves), max ${max}`;
	else if (outcome === 'context')
		text = `the history outgrew the context window after ${moves} moves, max ${max}`;
	else text = `unfinished (${String(outcome)})`;
	items.push({ kind: 'outcome', text, reward: trajectory.reward });
	return items;
}
