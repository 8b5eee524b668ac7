/**
 * @file The model's replies in a game as the page colours them: each sampled token with the
 * probability the policy gave it (from the choice's OpenAI `logprobs`, which the run loop
 * asks for). Pure, so the game cards and their tests read the same thing.
 */
import type { TrajectoryJson } from '../agent/jsonl';
import { shownText } from '../util/utf8';

export interface ReplyToken {
	text: string;
	/** The policy's probability of this token when it was sampled (0..1). */
	p: number;
}

/** Each model reply of the trajectory (every history), in order; replies without logprobs are skipped. */
export function replyTokens(trajectory: TrajectoryJson): ReplyToken[][] {
	const histories = [trajectory, ...(trajectory.additional_histories ?? [])];
	const out: ReplyToken[][] = [];
	for (const h of histories)
		for (const item of h.messages_and_choices) {
			if (!('message' in item) || 'role' in item) continue; // a message, not a choice
			const content = item.logprobs?.content;
			if (!content?.length) continue;
			out.push(
				content.map((t) => ({
					// a token holding part of a character shows its bytes (\xE2), not U+FFFD
					text: shownText(t.token, t.bytes),
					p: Number.isFinite(t.logprob) ? Math.min(1, Math.max(0, Math.exp(t.logprob))) : 0
				}))
			);
		}
	return out;
}

/** A token's background: red (unsure, p near 0) through yellow to green (sure, p near 1). */
export function tokenColour(p: number): string {
	const hue = Math.round(120 * Math.min(1, Math.max(0, p)));
	return `hsl(${hue} 70% 82%)`;
}

/** Whitespace made visible, so a token that is a space or a newline still shows. */
export function visibleToken(text: string): string {
	return text.replace(/\n/g, '⏎').replace(/ /g, '·') || '∅';
}
