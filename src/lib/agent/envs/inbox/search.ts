/**
 * @file Keyword search over a mailbox, ranked by BM25 (MiniSearch's BM25+, k 1.2, b 0.7,
 * d 0.5): terms that few emails contain (a city, a product, a name) weigh more than terms
 * every email of a kind contains ("flight", "meeting"), so naming the entity finds the email.
 * ART-E searches an SQLite FTS5 index of the inbox the same way (full-text, ranked).
 *
 * Indexed: subject, body and the sender's name. Terms are lowercased words and numbers; a
 * trailing plural "s" is dropped (on words of five letters or more, both in the index and in
 * the query), so "departs" matches "depart". No prefix or fuzzy matching: a keyword matches
 * whole words only. A keyword with spaces is its words. Results: score, best first, ties by id.
 */
import MiniSearch from 'minisearch';
import type { Email, Mailbox } from './mailbox';

/** Results a search returns at most (ART-E's search returns a short list too). */
export const SEARCH_LIMIT = 5;

/** Index terms of a text: lowercased words and numbers. */
export function terms(text: string): string[] {
	return (text.toLowerCase().match(/[a-z0-9]+/g) ?? []).map(stem);
}

/** The light stemming both sides get: "departs" -> "depart", "glass" stays. */
export function stem(term: string): string {
	return term.length >= 5 && term.endsWith('s') && !term.endsWith('ss') ? term.slice(0, -1) : term;
}

export interface SearchHit {
	email: Email;
	score: number;
}

export class InboxIndex {
	readonly mailbox: Mailbox;
	readonly #index: MiniSearch<Email>;

	constructor(mailbox: Mailbox) {
		this.mailbox = mailbox;
		this.#index = new MiniSearch<Email>({
			fields: ['subject', 'body', 'fromName'],
			idField: 'id',
			tokenize: (text) => text.split(/[^A-Za-z0-9]+/).filter(Boolean),
			processTerm: (term) => stem(term.toLowerCase()),
			searchOptions: { combineWith: 'OR', prefix: false, fuzzy: false }
		});
		this.#index.addAll(mailbox.emails);
	}

	/** The best `limit` emails for the keywords; none for no usable keyword. */
	search(keywords: readonly string[], limit = SEARCH_LIMIT): SearchHit[] {
		const query = keywords.flatMap(terms);
		if (!query.length) return [];
		return this.#index
			.search(query.join(' '))
			.map((r) => ({ email: this.mailbox.byId.get(String(r.id)) as Email, score: r.score }))
			.sort((a, b) => b.score - a.score || (a.email.id < b.email.id ? -1 : 1))
			.slice(0, limit);
	}
}

const indexes = new WeakMap<Mailbox, InboxIndex>();

/** The index of a mailbox, built once per mailbox object. */
export function indexOf(mailbox: Mailbox): InboxIndex {
	let index = indexes.get(mailbox);
	if (!index) indexes.set(mailbox, (index = new InboxIndex(mailbox)));
	return index;
}
