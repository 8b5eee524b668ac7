/**
 * Transcripts of random legal play: every assistant move parses strictly (the rollout's own
 * parser) and is legal on the board the user turn shows; when the agent's last move ends
 * the game the reward is that result's, else the opponent ended it (a loss or a draw);
 * several outcomes occur; seeds repeat.
 */
import { describe, expect, it } from 'vitest';
import {
	legalPlayTranscript,
	legalPlayTranscripts
} from '../../../../src/lib/agent/envs/tictactoe/demonstrations';
import {
	checkMove,
	play,
	REWARD,
	winner,
	type Board
} from '../../../../src/lib/agent/envs/tictactoe/rollout';

/** Parses the rendered board back (rows A-C, cells joined by ' | '). */
function boardFromText(text: string): Board {
	return text
		.split('\n')
		.filter((l) => /^[A-C] {2}/.test(l))
		.flatMap((r) =>
			r
				.slice(3)
				.split(' | ')
				.map((c) => c.trim() as 'x' | 'o' | '_')
		);
}

describe('legalPlayTranscripts', () => {
	it('plays legal moves in the rollout format to the end of the game', () => {
		const games = legalPlayTranscripts(60, 7);
		const rewards = new Set<number>();
		for (const g of games) {
			const items = g.messagesAndChoices as { role: string; content: string }[];
			expect(items[0].role).toBe('system');
			const agent = g.metadata.agent_symbol as 'x' | 'o';
			let after: Board = [];
			for (let i = 1; i < items.length; i += 2) {
				expect([items[i].role, items[i + 1].role]).toEqual(['user', 'assistant']);
				const shown = boardFromText(items[i].content);
				expect(shown).toHaveLength(9);
				expect(winner(shown)).toBeNull();
				const move = checkMove(shown, items[i + 1].content);
				expect(move.ok, items[i + 1].content).toBe(true);
				if (move.ok) after = play(shown, move.index, agent);
			}
			const ended = winner(after);
			if (ended === agent) expect(g.reward).toBe(REWARD.win);
			else if (ended === 'draw') expect(g.reward).toBe(REWARD.draw);
			else expect([REWARD.loss, REWARD.draw]).toContain(g.reward);
			rewards.add(g.reward);
		}
		expect(rewards).toEqual(new Set([REWARD.win, REWARD.draw, REWARD.loss]));
		expect(legalPlayTranscript(7 * 1_000_003 + 3).messages()).toEqual(games[3].messages());
	});
});
