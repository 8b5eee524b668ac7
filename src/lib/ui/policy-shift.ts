/**
 * @file What one GRPO update did to the policy, as the page shows it: for the best and the
 * worst game of a group (the run's 'shift' event), each sampled token's probability when it
 * was sampled and under the updated policy. Token texts come from the game's replies (the
 * choices' logprobs, reply-tokens.ts) when the page has them, in the order training reads
 * them; otherwise the token's id stands in. Pure, for the page and its tests.
 */
import type { RunEvent } from '../run';
import type { ReplyToken } from './reply-tokens';

export interface ShiftToken {
	text: string;
	before: number;
	after: number;
}

export interface ShiftGame {
	/** The game with the highest advantage, or the lowest. */
	kind: 'best' | 'worst';
	/** Its rollout index in the group (its card's). */
	index: number;
	reward: number;
	advantage: number;
	tokens: ShiftToken[];
}

export interface ShiftView {
	step: number;
	group: number;
	games: ShiftGame[];
	/** The KL penalty's β the update ran with (0: none), when known. */
	klBeta?: number;
}

const prob = (logprob: number) => (Number.isFinite(logprob) ? Math.exp(logprob) : 0);

/**
 * Which way a token moved, as the page shows it (probabilities to 2 decimals): a change
 * the numbers on screen do not show ("1.00 → 1.00") is no change.
 */
export function shiftDirection(t: ShiftToken): 'up' | 'down' | 'same' {
	const [b, a] = [Math.round(t.before * 100), Math.round(t.after * 100)];
	return a > b ? 'up' : a < b ? 'down' : 'same';
}

/** The view of a 'shift' event; `replies(index)`: that game's replies, when known. */
export function shiftView(
	event: Extract<RunEvent, { type: 'shift' }>,
	replies: (index: number) => ReplyToken[][] | undefined,
	klBeta?: number
): ShiftView {
	return {
		step: event.step,
		group: event.group,
		...(klBeta !== undefined ? { klBeta } : {}),
		games: event.games.map((g, i) => {
			const texts =
				replies(g.rolloutIndex)
					?.flat()
					.map((t) => t.text) ?? [];
			return {
				kind: i === 0 ? 'best' : 'worst',
				index: g.rolloutIndex,
				reward: g.reward,
				advantage: g.advantage,
				tokens: g.ids.map((id, k) => ({
					text: texts[k] ?? `#${id}`,
					before: prob(g.before[k]),
					after: prob(g.after[k])
				}))
			};
		})
	};
}

const p2 = (x: number) => x.toFixed(2);

/** One sentence per game: its tokens' probabilities before -> after (the first few). */
export function describeShift(view: ShiftView, shown = 6): string[] {
	return view.games.map((g) => {
		const tokens = g.tokens
			.slice(0, shown)
			.map((t) => `${JSON.stringify(t.text)} ${p2(t.before)} → ${p2(t.after)}`)
			.join(', ');
		const more = g.tokens.length > shown ? ', …' : '';
		const sign = g.advantage > 0 ? '+' : g.advantage < 0 ? '−' : '';
		return (
			`The ${g.kind} game of group ${view.group + 1} (advantage ${sign}${p2(Math.abs(g.advantage))}): ` +
			`${tokens}${more}.`
		);
	});
}

/**
 * The tokens that moved against their game's advantage (the best game's that fell, the
 * worst game's that rose), one sentence per such game saying why that happens: empty when
 * every shown change goes the advantage's way.
 */
export function againstAdvantage(view: ShiftView): string[] {
	return view.games.flatMap((g) => {
		const against = g.advantage > 0 ? 'down' : g.advantage < 0 ? 'up' : null;
		if (!against) return [];
		const moved = g.tokens.filter((t) => shiftDirection(t) === against);
		if (moved.length === 0) return [];
		const example = moved[0];
		return [
			`${moved.length} of the ${g.kind} game's ${g.tokens.length} tokens ${against === 'up' ? 'rose' : 'fell'} although its advantage is ${g.advantage > 0 ? 'positive' : 'negative'} ` +
				`(${JSON.stringify(example.text)} ${p2(example.before)} → ${p2(example.after)}). ` +
				'One update moves the shared LoRA weights for every game of the step at once: a token that also comes in games on the other side of their group ' +
				'(the same move, the same formatting) is pushed both ways, and the sum decides; ' +
				(view.klBeta
					? `the KL penalty (β ${view.klBeta}) pulls every token back towards the reference, and `
					: '') +
				'the ratio clip bounds how far any one token is pushed.'
		];
	});
}
