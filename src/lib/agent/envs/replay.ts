/**
 * @file What the studio draws of one rollout: a list of items an environment makes from a
 * finished trajectory alone (`replay(trajectory)`, a pure function: no game state kept
 * elsewhere), so the page can replay any rollout it received, stored or exported. Board
 * games give boards (cells as text, '' for empty) between moves; tool-using agents give a
 * transcript of messages, tool calls and tool results. One component renders every kind.
 */

export type ReplayItem =
	/** A game position; `rows[r][c]` is the cell's text ('' when empty). */
	| {
			kind: 'board';
			rows: string[][];
			caption: string;
			/** Row and column names drawn beside the board (tic-tac-toe's A-C and 1-3, as moves name squares). */
			labels?: { rows: string[]; cols: string[] };
	  }
	| { kind: 'message'; role: 'system' | 'user' | 'assistant'; text: string }
	| { kind: 'tool-call'; name: string; arguments: string }
	| { kind: 'tool-result'; name: string; text: string }
	/** The end: how the game went, and its reward. */
	| { kind: 'outcome'; text: string; reward: number };
