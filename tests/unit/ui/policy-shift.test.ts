/**
 * The page's view of what an update changed (ui/policy-shift.ts): probabilities from the
 * logprobs (a non-finite one shown as 0), token texts from the game's replies in training's
 * order (across its turns), an id standing in for a token the page has no text for, the
 * best game first; and the sentences the step-through guide says.
 */
import { describe, expect, it } from 'vitest';
import type { RunEvent } from '../../../src/lib/run';
import {
	againstAdvantage,
	describeShift,
	shiftDirection,
	shiftView
} from '../../../src/lib/ui/policy-shift';

const event: Extract<RunEvent, { type: 'shift' }> = {
	type: 'shift',
	step: 4,
	round: 3,
	group: 1,
	games: [
		{
			trajectory: 2,
			rolloutIndex: 5,
			reward: 1,
			advantage: 1.5,
			ids: [10, 11, 12],
			before: [Math.log(0.5), Math.log(0.9), Math.log(0.2)],
			after: [Math.log(0.6), Math.log(0.95), Math.log(0.3)]
		},
		{
			trajectory: 0,
			rolloutIndex: 1,
			reward: 0,
			advantage: -0.75,
			ids: [20, 21],
			before: [Math.log(0.4), -Infinity],
			after: [Math.log(0.25), Math.log(0.01)]
		}
	]
};

describe('policy shift view', () => {
	it('reads probabilities, and token texts from the replies of each game in order', () => {
		const replies = new Map([
			[
				5,
				[
					[
						{ text: '<move>', p: 0.5 },
						{ text: 'B2', p: 0.9 }
					],
					[{ text: '</move>', p: 0.2 }] // a later turn: training reads it after the first
				]
			]
		]);
		const view = shiftView(event, (i) => replies.get(i));
		expect(view).toMatchObject({ step: 4, group: 1 });
		const [best, worst] = view.games;
		expect(best).toMatchObject({ kind: 'best', index: 5, reward: 1, advantage: 1.5 });
		expect(best.tokens.map((t) => t.text)).toEqual(['<move>', 'B2', '</move>']);
		expect(best.tokens[0].before).toBeCloseTo(0.5, 12);
		expect(best.tokens[0].after).toBeCloseTo(0.6, 12);
		expect(worst.kind).toBe('worst');
		expect(worst.tokens.map((t) => t.text)).toEqual(['#20', '#21']); // no replies for game 1
		expect(worst.tokens[1].before).toBe(0);
		expect(describeShift(view)).toEqual([
			'The best game of group 2 (advantage +1.50): "<move>" 0.50 → 0.60, "B2" 0.90 → 0.95, "</move>" 0.20 → 0.30.',
			'The worst game of group 2 (advantage −0.75): "#20" 0.40 → 0.25, "#21" 0.00 → 0.01.'
		]);
		expect(describeShift(view, 1)[0]).toBe(
			'The best game of group 2 (advantage +1.50): "<move>" 0.50 → 0.60, ….'
		);
	});

	it("explains tokens that moved against their game's advantage, and only those", () => {
		const view = shiftView(event, () => undefined, 0.05);
		// the best game's three tokens all rose; the worst game's "#21" rose 0.00 -> 0.01
		const notes = againstAdvantage(view);
		expect(notes).toHaveLength(1);
		expect(notes[0]).toMatch(
			/^1 of the worst game's 2 tokens rose although its advantage is negative \("#21" 0\.00 → 0\.01\)\. One update moves the shared LoRA weights/
		);
		expect(notes[0]).toContain('the KL penalty (β 0.05) pulls every token back');
		// no KL penalty: none named
		expect(againstAdvantage({ ...view, klBeta: 0 })[0]).not.toContain('KL');
		const fell = {
			...view,
			games: [{ ...view.games[0], tokens: [{ text: 'B2', before: 0.9, after: 0.7 }] }]
		};
		expect(againstAdvantage(fell)[0]).toMatch(
			/^1 of the best game's 1 tokens fell although its advantage is positive/
		);
		const flat = { ...view, games: [{ ...view.games[1], advantage: 0 }] };
		expect(againstAdvantage(flat)).toEqual([]);
	});

	it('colours only changes the page shows: 1.00 -> 1.00 is no change', () => {
		expect(shiftDirection({ text: 'a', before: 0.5, after: 0.6 })).toBe('up');
		expect(shiftDirection({ text: 'a', before: 0.3, after: 0.2 })).toBe('down');
		expect(shiftDirection({ text: 'a', before: 0.9991, after: 0.9998 })).toBe('same');
		expect(shiftDirection({ text: 'a', before: 0.444, after: 0.446 })).toBe('up'); // 0.44 -> 0.45
		expect(shiftDirection({ text: 'a', before: 0, after: 0.004 })).toBe('same');
	});
});
