/**
 * @file What the studio draws of a letters game: the prompt, the reply and its reward (a
 * pure function of the trajectory, as every environment's replay).
 */
import type { Trajectory } from '../../trajectory';
import type { ReplayItem } from '../replay';
import { PROMPT } from './rules';
import { shownReply } from '../../../util/utf8';

/** The reply, with bytes that are not UTF-8 written \xNN (util/utf8.ts) when its tokens say. */
function replyText(t: Trajectory): string {
	const text = t.messages().at(-1)?.content?.toString() ?? '';
	const tokens = t.choices().at(-1)?.logprobs?.content ?? [];
	return shownReply(
		text,
		tokens.map((k) => k.bytes ?? [])
	);
}

export function replay(t: Trajectory): ReplayItem[] {
	return [
		{ kind: 'message', role: 'user', text: PROMPT },
		{ kind: 'message', role: 'assistant', text: replyText(t) },
		{ kind: 'outcome', text: 'share of a–m letters', reward: t.reward }
	];
}
