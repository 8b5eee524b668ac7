/**
 * The game cards' token view (ui/reply-tokens.ts): every model reply of a trajectory (its
 * additional histories too), in order, each token with exp(logprob); messages and choices
 * without logprobs skipped; colours from red (p 0) to green (p 1); whitespace made visible.
 */
import { describe, expect, it } from 'vitest';
import type { TrajectoryJson } from '../../../src/lib/agent/jsonl';
import { replyTokens, tokenColour, visibleToken } from '../../../src/lib/ui/reply-tokens';

const choice = (tokens: [string, number][] | null) => ({
	index: 0,
	finish_reason: 'stop' as const,
	message: {
		role: 'assistant' as const,
		content: tokens?.map(([t]) => t).join('') ?? 'x',
		refusal: null
	},
	logprobs: tokens && {
		content: tokens.map(([token, logprob]) => ({ token, logprob, bytes: null, top_logprobs: [] })),
		refusal: null
	}
});

describe('reply tokens', () => {
	it('reads each reply of every history, in order, with p = exp(logprob)', () => {
		const t = {
			messages_and_choices: [
				{ role: 'user', content: 'board 1' },
				choice([
					['<move>', Math.log(0.9)],
					['B2', Math.log(0.25)]
				]),
				{ role: 'user', content: 'board 2' },
				choice(null), // a reply sampled without logprobs: skipped
				choice([['</move>', 0]])
			],
			tools: null,
			additional_histories: [{ messages_and_choices: [choice([[' up', -Infinity]])], tools: null }],
			reward: 1,
			metrics: {},
			metadata: {},
			logs: []
		} as unknown as TrajectoryJson;
		const replies = replyTokens(t);
		expect(replies.map((r) => r.map((x) => x.text))).toEqual([
			['<move>', 'B2'],
			['</move>'],
			[' up']
		]);
		expect(replies[0][0].p).toBeCloseTo(0.9, 12);
		expect(replies[0][1].p).toBeCloseTo(0.25, 12);
		expect(replies[1][0].p).toBe(1);
		expect(replies[2][0].p).toBe(0);
	});

	it('colours red to green by p, clamped, and shows whitespace', () => {
		expect(tokenColour(0)).toBe('hsl(0 70% 82%)');
		expect(tokenColour(0.5)).toBe('hsl(60 70% 82%)');
		expect(tokenColour(1)).toBe('hsl(120 70% 82%)');
		expect(tokenColour(7)).toBe(tokenColour(1));
		expect(tokenColour(-1)).toBe(tokenColour(0));
		expect(visibleToken(' a\nb')).toBe('·a⏎b');
		expect(visibleToken('')).toBe('∅');
	});
});
