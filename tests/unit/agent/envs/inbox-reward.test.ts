/**
 * The inbox reward (src/lib/agent/envs/inbox/reward.ts) against hand computations: ART-E's bands
 * (format error < wrong < no answer < right), partial credit, and the answer rule.
 */
import { describe, expect, it } from 'vitest';
import {
	answerIsCorrect,
	emptyRubric,
	inboxReward,
	isIDontKnow,
	normalizeAnswer,
	partialCredit,
	type Rubric
} from '../../../../src/lib/agent/envs/inbox';

const rubric = (r: Partial<Rubric>): Rubric => ({ ...emptyRubric(), ...r });

describe('answerIsCorrect', () => {
	it('normalizes case, punctuation and whitespace', () => {
		expect(normalizeAnswer('  The  Blue-Cafe!! ')).toBe('the blue cafe');
		expect(normalizeAnswer('$84.20')).toBe('84 20');
		expect(answerIsCorrect('Blue Cafe', 'the blue cafe')).toBe(true);
		expect(answerIsCorrect('14:15', '14.15')).toBe(true);
		expect(answerIsCorrect('$84.20', '84.20 dollars')).toBe(true);
	});

	it('wants the expected words whole and in order, in at most 4 more words', () => {
		expect(answerIsCorrect('14:15', 'at 14:15 on Friday')).toBe(true);
		expect(answerIsCorrect('14:15', '114:15')).toBe(false);
		expect(answerIsCorrect('B4', 'B40')).toBe(false);
		expect(answerIsCorrect('Elm Street kiosk', 'kiosk Elm Street')).toBe(false);
		expect(answerIsCorrect('May 12', 'it is on May 12 at')).toBe(true); // 4 more words
		expect(answerIsCorrect('May 12', 'it is on May 12 at noon')).toBe(false); // 5 more
		expect(answerIsCorrect('May 12', '')).toBe(false);
	});

	it("knows I don't know", () => {
		for (const a of ["I don't know", 'i do not know.', 'Unknown', '', ' ? '])
			expect(isIDontKnow(a)).toBe(true);
		expect(isIDontKnow('May 12')).toBe(false);
	});
});

describe('inboxReward', () => {
	const max = 6;
	it('gives format errors -2 / -1.9 / -1.8 plus partial credit', () => {
		expect(inboxReward(rubric({ formatError: 'no_tool_call', numTurns: 1 }), max)).toBe(-1.9);
		expect(inboxReward(rubric({ formatError: 'unknown_tool', numTurns: 1 }), max)).toBe(-1.8);
		expect(inboxReward(rubric({ formatError: 'bad_arguments', numTurns: 1 }), max)).toBe(-1.7);
		const r = rubric({
			formatError: 'bad_arguments',
			foundEmail: true,
			readEmail: true,
			invalidRead: true
		});
		expect(inboxReward(r, max)).toBe(-1.6);
	});

	it('gives a wrong answer -1 plus partial credit', () => {
		const base = { attemptedAnswer: true, numTurns: 3 };
		expect(inboxReward(rubric({ ...base, invalidRead: true }), max)).toBe(-1);
		const all = rubric({ ...base, foundEmail: true, readEmail: true, citedEmail: true });
		expect(partialCredit(all)).toBeCloseTo(0.4, 12);
		expect(inboxReward(all, max)).toBe(-0.6);
	});

	it("gives no answer (I don't know, out of turns) 0 plus partial credit", () => {
		expect(inboxReward(rubric({ attemptedAnswer: true, saidIDontKnow: true }), max)).toBe(0.1);
		expect(inboxReward(rubric({ ranOutOfTurns: true, numTurns: 6, foundEmail: true }), max)).toBe(
			0.2
		);
		const r = rubric({ ranOutOfTurns: true, foundEmail: true, readEmail: true, invalidRead: true });
		expect(inboxReward(r, max)).toBe(0.2);
	});

	it('gives a right answer 1 + 0.3 cited + 0.1 / references + 0.1 (1 - turns / max)', () => {
		const right = { attemptedAnswer: true, correct: true };
		// The expert: 3 turns, cites the one email: 1 + 0.3 + 0.1 + 0.1 * (1 - 3/6).
		const expert = rubric({ ...right, citedEmail: true, numReferences: 1, numTurns: 3 });
		expect(inboxReward(expert, max)).toBe(1.45);
		// Two references, cited, 3 turns: 1 + 0.3 + 0.05 + 0.05.
		expect(
			inboxReward(rubric({ ...right, citedEmail: true, numReferences: 2, numTurns: 3 }), max)
		).toBe(1.4);
		// No reference, answered on turn 1: 1 + 0.1 * 5/6; found/read credit does not apply.
		const bare = rubric({ ...right, numTurns: 1, foundEmail: true, readEmail: true });
		expect(inboxReward(bare, max)).toBeCloseTo(1 + 0.1 * (5 / 6), 9);
		// On the last turn: no speed bonus.
		expect(inboxReward(rubric({ ...right, numTurns: 6 }), max)).toBe(1);
	});

	it('keeps the bands apart at their extremes', () => {
		const p = { foundEmail: true, readEmail: true, citedEmail: true };
		const bestFormat = inboxReward(rubric({ ...p, formatError: 'bad_arguments' }), 6);
		const worstWrong = inboxReward(rubric({ attemptedAnswer: true, invalidRead: true }), 6);
		const bestWrong = inboxReward(rubric({ ...p, attemptedAnswer: true }), 6);
		const worstNone = inboxReward(rubric({ ranOutOfTurns: true, invalidRead: true }), 6);
		const bestNone = inboxReward(rubric({ ...p, ranOutOfTurns: true }), 6);
		const worstRight = inboxReward(
			rubric({ attemptedAnswer: true, correct: true, numTurns: 6 }),
			6
		);
		expect(bestFormat).toBeLessThan(worstWrong);
		expect(bestWrong).toBeLessThan(worstNone);
		expect(bestNone).toBeLessThan(worstRight);
		expect([bestFormat, worstWrong, bestWrong, worstNone, bestNone, worstRight]).toEqual([
			-1.4, -1, -0.6, 0, 0.4, 1
		]);
	});
});
