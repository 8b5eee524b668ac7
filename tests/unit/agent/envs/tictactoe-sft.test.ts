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
import { tictactoeEnvironment } from '../../../../src/lib/agent/envs/tictactoe/environment';
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

/** Mean reward and losses of `n` demonstrations at `skill` (seeds disjoint from the above). */
function scoreOf(skill: number, n = 300) {
	const games = legalPlayTranscripts(n, 11, skill);
	return {
		mean: games.reduce((s, g) => s + g.reward, 0) / n,
		losses: games.filter((g) => g.reward === REWARD.loss).length,
		games
	};
}

describe('legalPlayTranscripts with skill (a share of perfect moves)', () => {
	it('skill 0 is the random play the shipped warm start imitated, draw for draw', () => {
		const plain = legalPlayTranscripts(40, 7);
		const zero = legalPlayTranscripts(40, 7, 0);
		expect(zero.map((g) => g.messages())).toEqual(plain.map((g) => g.messages()));
		expect(zero[0].metadata.source).toBe('random-legal');
	});

	it('perfect play never loses to the random opponent; a share of it scores in between', () => {
		const random = scoreOf(0);
		const half = scoreOf(0.5);
		const perfect = scoreOf(1);
		// (2,000 games: skill 0 scores 0.50, 0.5 scores 0.74, 1 scores 0.94, 0.90 as O)
		expect(perfect.losses).toBe(0);
		expect(perfect.mean).toBeGreaterThan(0.85);
		expect(random.losses).toBeGreaterThan(50);
		expect(half.mean).toBeGreaterThan(random.mean + 0.1);
		expect(half.mean).toBeLessThan(perfect.mean - 0.05);
		expect(perfect.games[0].metadata.source).toBe('perfect-share-1');
		// still legal moves in the rollout's format
		for (const g of half.games)
			for (const m of g.messagesAndChoices as { role: string; content: string }[])
				if (m.role === 'assistant') expect(m.content).toMatch(/^<move>[A-C][1-3]<\/move>$/);
	});

	it("the environment's demonstrations take the recipe's skill (run-loop passes sft.skill)", async () => {
		const games = await tictactoeEnvironment.demonstrations!(20, 11, {}, { skill: 1 });
		expect(games.map((g) => g.metadata.source)).toEqual(Array(20).fill('perfect-share-1'));
		const plain = await tictactoeEnvironment.demonstrations!(20, 11, {});
		expect(plain.map((g) => g.messages())).toEqual(
			legalPlayTranscripts(20, 11).map((g) => g.messages())
		);
	});

	it('refuses a skill outside [0, 1]', () => {
		expect(() => legalPlayTranscript(1, 1.5)).toThrow(RangeError);
		expect(() => legalPlayTranscript(1, Number.NaN)).toThrow(RangeError);
	});
});
