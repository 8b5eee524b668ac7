/**
 * BM25 search over a mailbox (src/lib/agent/envs/inbox/search.ts): the expert's keywords put the
 * answer email first, and on a crafted mailbox BM25 finds the email a substring scan
 * (count keyword occurrences) buries under emails that repeat common words.
 */
import { describe, expect, it } from 'vitest';
import {
	InboxIndex,
	indexOf,
	mailboxOf,
	questionKeywords,
	scenario,
	searchInbox,
	stem,
	terms,
	type Email,
	type Mailbox
} from '../../../../src/lib/agent/envs/inbox';

/** The naive baseline: emails by how many times the keywords occur as substrings. */
function substringScan(mailbox: Mailbox, keywords: string[], limit = 5): Email[] {
	const count = (e: Email) => {
		const text = `${e.subject} ${e.body} ${e.fromName}`.toLowerCase();
		return keywords.reduce((n, k) => n + text.split(k.toLowerCase()).length - 1, 0);
	};
	return mailbox.emails
		.map((e) => ({ e, n: count(e) }))
		.filter((x) => x.n > 0)
		.sort((a, b) => b.n - a.n)
		.slice(0, limit)
		.map((x) => x.e);
}

function email(id: string, subject: string, body: string, fromName = 'Sam Reed'): Email {
	return {
		id,
		subject,
		body,
		fromName,
		fromAddress: 'sam.reed@acme.com',
		date: '2024-01-01',
		kind: 'meeting',
		key: id,
		facts: {}
	};
}

describe('InboxIndex', () => {
	it('ranks the answer email first for the expert keywords', () => {
		let first = 0;
		let listed = 0;
		const n = 300;
		for (let seed = 0; seed < n; seed++) {
			const s = scenario(seed);
			const hits = indexOf(mailboxOf(s.mailboxSeed)).search(questionKeywords(s.question));
			expect(hits.length).toBeLessThanOrEqual(5);
			const rank = hits.findIndex((h) => h.email.id === s.messageIds[0]);
			if (rank === 0) first++;
			if (rank >= 0) listed++;
		}
		expect(first / n).toBeGreaterThan(0.95);
		expect(listed / n).toBeGreaterThan(0.98);
	});

	it('beats a substring scan on a crafted mailbox', () => {
		const emails = [
			email(
				'm1001',
				'Meeting room',
				'The meeting room for the meeting is room B2. Room B3 is the other meeting room.'
			),
			email(
				'm1002',
				'Meeting room',
				'Meeting in room C1, then the room for the next meeting is room C2.'
			),
			email('m1003', 'Sales meeting', 'The sales meeting is in room A4.'),
			email('m1004', 'Hiring meeting', 'The hiring meeting is in room A5.'),
			email('m1005', 'Oslo meeting', 'The Oslo trip meeting is in room A1.'),
			email('m1006', 'Design meeting', 'The design meeting is in room A6.'),
			// "Oslo" as a substring of a longer word: the scan counts it, BM25 does not.
			email('m1007', 'Koslov report', 'Koslov sends the Koslova report.')
		];
		const mailbox: Mailbox = {
			seed: 0,
			emails,
			byId: new Map(emails.map((e) => [e.id, e])),
			changeOf: new Map()
		};
		const keywords = ['meeting', 'room', 'Oslo'];
		const scan = substringScan(mailbox, keywords).map((e) => e.id);
		expect(scan[0]).toBe('m1001');
		expect(scan.indexOf('m1005')).toBeGreaterThan(1);
		const bm25 = new InboxIndex(mailbox).search(keywords).map((h) => h.email.id);
		expect(bm25[0]).toBe('m1005');
		expect(bm25).not.toContain('m1007');
	});

	it('matches whole words, case-insensitively, with a light plural stem', () => {
		expect(terms('Departs at 07:45, Paris!')).toEqual(['depart', 'at', '07', '45', 'pari']);
		expect(stem('glass')).toBe('glass');
		expect(stem('news')).toBe('news');
		const s = scenario(40);
		const index = indexOf(mailboxOf(s.mailboxSeed));
		expect(index.search([])).toEqual([]);
		expect(index.search(['', '  ', '!!'])).toEqual([]);
		expect(index.search(['zzzqqq'])).toEqual([]);
		const lower = index.search(questionKeywords(s.question).map((k) => k.toLowerCase()));
		const upper = index.search(questionKeywords(s.question).map((k) => k.toUpperCase()));
		expect(upper.map((h) => h.email.id)).toEqual(lower.map((h) => h.email.id));
	});

	it('gives search_inbox results as compact JSON without bodies', () => {
		const s = scenario(9);
		const m = mailboxOf(s.mailboxSeed);
		const { content, ids } = searchInbox(indexOf(m), questionKeywords(s.question));
		const results = JSON.parse(content) as Record<string, string>[];
		expect(results.map((r) => r.message_id)).toEqual(ids);
		expect(Object.keys(results[0])).toEqual(['message_id', 'from', 'subject']);
		expect(content).not.toContain(s.answer);
		expect(ids[0]).toBe(s.messageIds[0]);
	});
});
