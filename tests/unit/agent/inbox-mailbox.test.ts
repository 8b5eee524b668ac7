/**
 * The inbox environment's data (src/lib/agent/inbox/mailbox.ts, questions.ts): mailboxes are
 * a function of their seed, questions have exactly one answer email whose body holds the
 * answer as written, and evaluation scenarios never share a mailbox with training ones.
 */
import { describe, expect, it } from 'vitest';
import {
	answerableEmails,
	EVAL_SEED,
	generateMailbox,
	MAILBOX_SIZE,
	mailboxOf,
	mailboxSeedOf,
	questionsFor,
	scenario
} from '../../../src/lib/agent/inbox';

describe('generateMailbox', () => {
	it('is the same for the same seed and different for another', () => {
		const a = generateMailbox(7);
		expect(generateMailbox(7)).toEqual(a);
		const b = generateMailbox(8);
		expect(b.emails.map((e) => e.body)).not.toEqual(a.emails.map((e) => e.body));
		expect(a.emails).toHaveLength(MAILBOX_SIZE);
		expect(MAILBOX_SIZE).toBe(300);
	});

	it('has unique short ids, every kind, and short bodies holding their facts', () => {
		const m = generateMailbox(3);
		const ids = m.emails.map((e) => e.id);
		expect(new Set(ids).size).toBe(ids.length);
		for (const id of ids) expect(id).toMatch(/^m\d{4}$/);
		expect(new Set(m.emails.map((e) => e.kind)).size).toBe(8);
		for (const e of m.emails) {
			expect(m.byId.get(e.id)).toBe(e);
			expect(e.date).toMatch(/^2024-\d\d-\d\d$/);
			expect(e.body.length).toBeLessThanOrEqual(160);
			expect((e.body.match(/[.!?](\s|$)/g) ?? []).length).toBeLessThanOrEqual(3);
			for (const fact of Object.values(e.facts)) expect(e.body).toContain(fact);
		}
	});

	it('keeps the vocabulary small', () => {
		const words = new Set<string>();
		for (let seed = 0; seed < 5; seed++)
			for (const e of generateMailbox(seed).emails)
				for (const w of `${e.fromName} ${e.subject} ${e.body}`.toLowerCase().match(/[a-z]+/g) ?? [])
					words.add(w);
		expect(words.size).toBeLessThan(400);
	});

	it('has many distractors of the same kind', () => {
		const m = generateMailbox(11);
		const meetings = m.emails.filter((e) => e.kind === 'meeting');
		expect(meetings.length).toBeGreaterThan(20);
		expect(new Set(meetings.map((e) => e.key)).size).toBeGreaterThan(15);
	});
});

describe('scenario', () => {
	it('is a function of its seed', () => {
		expect(scenario(123)).toEqual(scenario(123));
		const qs = new Set(Array.from({ length: 16 }, (_, i) => scenario(16 * 5 + i).question));
		expect(qs.size).toBeGreaterThan(10); // neighbours share a mailbox, not a question
	});

	it('asks about one email, unique by key, whose body holds the answer', () => {
		for (let seed = 0; seed < 400; seed += 3) {
			const s = scenario(seed);
			const m = mailboxOf(s.mailboxSeed);
			expect(s.messageIds).toHaveLength(1);
			const email = m.byId.get(s.messageIds[0])!;
			expect(email.body).toContain(s.answer);
			expect(email.facts[s.fact]).toBe(s.answer);
			expect(questionsFor(email).map(([, q]) => q)).toContain(s.question);
			const same = m.emails.filter((e) => e.kind === email.kind && e.key === email.key);
			expect(same).toEqual([email]);
			expect(answerableEmails(m)).toContain(email);
			expect(s.answer.split(' ').length).toBeLessThanOrEqual(4);
		}
	});

	it('never shares a mailbox between training and evaluation seeds', () => {
		expect(EVAL_SEED).toBe(900_000_000);
		expect(mailboxSeedOf(EVAL_SEED - 1)).toBeLessThan(mailboxSeedOf(EVAL_SEED));
		expect(mailboxSeedOf(0)).toBe(0);
		expect(mailboxSeedOf(15)).toBe(0);
		expect(mailboxSeedOf(16)).toBe(1);
		const evalScenario = scenario(EVAL_SEED);
		expect(evalScenario.mailboxSeed).toBe(EVAL_SEED / 16);
		expect(() => scenario(-1)).toThrow(RangeError);
	});
});
