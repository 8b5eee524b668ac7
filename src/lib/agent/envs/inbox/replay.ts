/**
 * @file What the studio draws of an inbox rollout (`ReplayItem`s, src/lib/agent/envs/replay.ts),
 * made from the trajectory alone: the question, then in order each reply's text (when it has
 * any), each tool call (name and JSON arguments) and each tool result (named by the call it
 * answers), and last the outcome (right, wrong, no answer, out of turns or which format
 * error, with the expected answer) and the reward. The system prompt is left out: it is the
 * same for every rollout.
 */
import type { ReplayItem } from '../replay';
import { isChoice, type Message, type Trajectory } from '../../trajectory';

const contentText = (content: unknown): string =>
	typeof content === 'string'
		? content
		: Array.isArray(content)
			? content.map((p: { text?: unknown }) => (typeof p?.text === 'string' ? p.text : '')).join('')
			: '';

/** How the episode ended, in words, from the trajectory's metadata and metrics. */
export function outcomeText(t: Pick<Trajectory, 'metadata' | 'metrics'>): string {
	const m = t.metadata;
	const expected = JSON.stringify(m.expected_answer ?? '');
	const given = JSON.stringify(m.final_answer ?? '');
	const cited = m.reference_message_ids ? `, citing ${m.reference_message_ids}` : '';
	switch (m.outcome) {
		case 'correct':
			return `Right: ${given}${cited} (expected ${expected} in ${m.expected_message_ids}).`;
		case 'wrong':
			return `Wrong: ${given}${cited}; expected ${expected} in ${m.expected_message_ids}.`;
		case 'i_dont_know':
			return `No answer (${given}); expected ${expected} in ${m.expected_message_ids}.`;
		case 'out_of_turns':
			return `Out of turns after ${t.metrics.num_turns} replies; expected ${expected}.`;
		case 'format_error':
			return `Format error (${m.format_error}); expected ${expected}.`;
		default:
			return `Unfinished; expected ${expected}.`;
	}
}

/** The replay of an inbox trajectory (see the file's doc). A pure function. */
export function replay(
	t: Pick<Trajectory, 'messagesAndChoices' | 'metadata' | 'metrics' | 'reward'>
): ReplayItem[] {
	const items: ReplayItem[] = [];
	const callNames = new Map<string, string>();
	for (const item of t.messagesAndChoices) {
		const message: Message = isChoice(item)
			? {
					role: 'assistant',
					content: item.message.content,
					...(item.message.tool_calls ? { tool_calls: item.message.tool_calls } : {})
				}
			: item;
		if (message.role === 'user')
			items.push({ kind: 'message', role: 'user', text: contentText(message.content) });
		else if (message.role === 'assistant') {
			const text = contentText(message.content);
			if (text !== '') items.push({ kind: 'message', role: 'assistant', text });
			for (const call of message.tool_calls ?? []) {
				const name = call.type === 'function' ? call.function.name : call.custom.name;
				const args = call.type === 'function' ? call.function.arguments : call.custom.input;
				callNames.set(call.id, name);
				items.push({ kind: 'tool-call', name, arguments: args });
			}
		} else if (message.role === 'tool')
			items.push({
				kind: 'tool-result',
				name: callNames.get(message.tool_call_id) ?? 'tool',
				text: contentText(message.content)
			});
	}
	items.push({ kind: 'outcome', text: outcomeText(t), reward: t.reward });
	return items;
}
