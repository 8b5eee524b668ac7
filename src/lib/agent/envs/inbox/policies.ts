/**
 * @file Scripted players of the inbox environment, as `Policy`s (policy-client.ts) so they
 * go through the same rollout a model does:
 *
 * - `expertPolicy(scenario)`: searches with the question's keywords (`questionKeywords`, a
 *   fixed stop-word filter a model can learn to imitate), reads each expected email (the one
 *   named; then its change, for a fact changed later) once the results list it: when one is
 *   not listed, it searches once more, for the change with the number or code the first email
 *   gave (the scenario's followUp), else with the longer keywords; and answers with the
 *   answer copied from the latest email read that holds it, citing the emails read; "I don't
 *   know" when none shows up. One tool call per reply: three replies per episode, five when
 *   a change is searched for and read too. With `readEveryChange` it reads the change of the
 *   asked email whatever fact it changes (searching for it as for an expected one), as a
 *   model must, which cannot tell from a subject line which fact a change moved; the answer
 *   comes from the latest email read that holds it, citing every email read.
 * - `randomPolicy(seed)`: a random tool each turn with plausible random arguments (words of
 *   the question, ids seen in tool results, words seen as the answer); always well-formed.
 *
 * Both read only the request's messages (and the expert its scenario), never the mailbox.
 */
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { Rng } from '../../../util/random';
import type { Policy, PolicyReply } from '../../policy-client';
import type { Scenario } from './questions';

/** Words a question is made of that say nothing about which email (lowercase). */
export const STOP_WORDS = new Set(
	(
		'what when where which who whom how much many is are was the a an my me i to of for in at ' +
		'on by from with does do did will must can could should up it this that and or'
	).split(' ')
);

/** The question's words minus STOP_WORDS, in order, once each, as written ("Ivy's" -> "Ivy"). */
export function questionKeywords(question: string): string[] {
	const words = question.replace(/'s\b/g, '').match(/[A-Za-z0-9]+/g) ?? [];
	const out: string[] = [];
	for (const w of words)
		if (!STOP_WORDS.has(w.toLowerCase()) && !out.some((o) => o.toLowerCase() === w.toLowerCase()))
			out.push(w);
	return out;
}

const call = (name: string, args: Record<string, unknown>): PolicyReply => ({
	toolCalls: [{ name, arguments: JSON.stringify(args) }]
});
const text = (m: ChatCompletionMessageParam): string =>
	typeof m.content === 'string'
		? m.content
		: Array.isArray(m.content)
			? m.content.map((p) => ('text' in p ? p.text : '')).join('')
			: '';
const parse = (s: string): unknown => {
	try {
		return JSON.parse(s);
	} catch {
		return null;
	}
};
const question = (messages: ChatCompletionMessageParam[]) =>
	text(messages.find((m) => m.role === 'user') ?? { role: 'user', content: '' });

export const I_DONT_KNOW_ANSWER = "I don't know";

/** The scripted expert of one scenario (see the file's doc). */
export function expertPolicy(s: Scenario, options: { readEveryChange?: boolean } = {}): Policy {
	const keywords = questionKeywords(s.question);
	// the emails to read, in order: the expected ones, or the asked one and its change
	const toRead =
		options.readEveryChange && s.changedBy ? [s.messageIds[0], s.changedBy.id] : s.messageIds;
	const followUp = options.readEveryChange ? s.changedBy?.via : s.followUp;
	const idk = call('return_final_answer', {
		answer: I_DONT_KNOW_ANSWER,
		reference_message_ids: []
	});
	return ({ messages }) => {
		const results = messages.filter((m) => m.role === 'tool').map((m) => parse(text(m)));
		if (results.length === 0) return call('search_inbox', { keywords });
		// what the episode showed so far: ids some search listed, emails read (id -> body)
		const listed = new Set<unknown>();
		const read = new Map<string, string>();
		const searched = new Set(
			messages.flatMap((m) =>
				m.role === 'assistant' && 'tool_calls' in m
					? (m.tool_calls ?? []).flatMap((c) =>
							c.type === 'function' && c.function.name === 'search_inbox'
								? ((parse(c.function.arguments) as { keywords?: string[] } | null)?.keywords ?? [])
								: []
						)
					: []
			)
		);
		let searches = 0;
		for (const r of results) {
			if (Array.isArray(r)) {
				searches++;
				for (const hit of r as { message_id?: unknown }[]) listed.add(hit?.message_id);
			} else {
				const email = r as { message_id?: unknown; body?: unknown } | null;
				if (typeof email?.body === 'string' && typeof email.message_id === 'string')
					read.set(email.message_id, email.body);
			}
		}
		// each expected email in turn (the one named, then its change): read once listed
		const next = toRead.find((id) => listed.has(id) && !read.has(id));
		if (next) return call('read_email', { message_id: next });
		if (toRead.some((id) => !listed.has(id))) {
			// a change names the email by its number: search for that once the email is read
			if (followUp && read.has(toRead[0]) && !searched.has(followUp))
				return call('search_inbox', { keywords: [followUp] });
			const longer = keywords.filter((k) => k.length >= 4);
			if (searches < 2 && longer.length && longer.length < keywords.length)
				return call('search_inbox', { keywords: longer });
			if (read.size === 0) return idk;
		}
		// the answer as the latest email read that holds it writes it (a change's new value)
		const cited = toRead.filter((id) => read.has(id));
		for (const id of [...cited].reverse()) {
			const body = read.get(id)!;
			const at = body.indexOf(s.answer);
			if (at >= 0)
				return call('return_final_answer', {
					answer: body.slice(at, at + s.answer.length),
					reference_message_ids: cited
				});
		}
		return idk;
	};
}

/** A random player (see the file's doc); its own generator from `seed`. */
export function randomPolicy(seed: number): Policy {
	const rng = new Rng(seed);
	const pick = <T>(items: readonly T[]): T => items[rng.int(items.length)];
	return ({ messages }) => {
		const words = question(messages).match(/[A-Za-z0-9]+/g) ?? ['email'];
		const results = messages.filter((m) => m.role === 'tool').map(text);
		const ids = [...new Set(results.join(' ').match(/\bm\d{4}\b/g) ?? [])];
		const seen = results.length ? (results.join(' ').match(/[A-Za-z0-9:$.]+/g) ?? words) : words;
		switch (rng.int(3)) {
			case 0:
				return call('search_inbox', {
					keywords: Array.from({ length: 1 + rng.int(3) }, () => pick(words))
				});
			case 1:
				return call('read_email', {
					message_id: ids.length ? pick(ids) : `m${1000 + rng.int(9000)}`
				});
			default: {
				const answer =
					rng.int(4) === 0
						? I_DONT_KNOW_ANSWER
						: Array.from({ length: 1 + rng.int(2) }, () => pick(seen)).join(' ');
				const refs = ids.length && rng.int(2) ? [pick(ids)] : [];
				return call('return_final_answer', { answer, reference_message_ids: refs });
			}
		}
	};
}
