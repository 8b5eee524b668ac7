/**
 * The inbox environment's data (src/lib/agent/envs/inbox/mailbox.ts, questions.ts): mailboxes are
 * a function of their seed, questions have exactly one answer email whose body holds the
 * answer as written, and evaluation scenarios never share a mailbox with training ones.
 */
import { describe, expect, it } from 'vitest';
import {
	answerableEmails,
	generateMailbox,
	MAILBOX_SIZE,
	mailboxOf,
	mailboxSeedOf,
	questionsFor,
	scenario
} from '../../../../src/lib/agent/envs/inbox';
import { EVAL_SEED } from '../../../../src/lib/agent/envs/seeds';

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

describe('changes: questions answered by two emails', () => {
	it('leave a mailbox without changes as it was; with them, add one later email per changeable email', () => {
		const plain = generateMailbox(21);
		expect(generateMailbox(21, MAILBOX_SIZE, { changes: 0 })).toEqual(plain);
		expect(plain.changeOf.size).toBe(0);
		const changed = generateMailbox(21, MAILBOX_SIZE, { changes: 1 });
		// the emails drawn before are the same, the change emails come after them
		expect(changed.emails.slice(0, MAILBOX_SIZE)).toEqual(plain.emails);
		const changes = changed.emails.slice(MAILBOX_SIZE);
		const changeable = plain.emails.filter((e) =>
			['flight', 'hotel', 'order', 'parcel', 'meeting', 'event'].includes(e.kind)
		);
		expect(changes).toHaveLength(changeable.length);
		expect(new Set(changed.emails.map((e) => e.id)).size).toBe(changed.emails.length);
		for (const c of changes) {
			const original = changed.byId.get(c.changes!.id)!;
			const fact = c.changes!.fact;
			expect(c.kind).toBe('change');
			expect(changed.changeOf.get(`${original.id}/${fact}`)).toBe(c);
			// the same sender, no earlier, with a new value, naming the email by its number or
			// code (which the email states) and not by what a question names, or (a meeting, an
			// invitation) as the email does
			expect(c.fromAddress).toBe(original.fromAddress);
			expect(c.date >= original.date).toBe(true);
			expect(c.facts[fact]).not.toBe(original.facts[fact]);
			expect(c.body).toContain(c.facts[fact]);
			const { via } = c.changes!;
			expect(via === undefined).toBe(['meeting', 'event'].includes(original.kind));
			for (const word of original.key.split('|'))
				if (via === undefined) expect(`${c.subject} ${c.body}`).toContain(word);
				else expect(`${c.subject} ${c.body}`).not.toContain(word);
			if (via !== undefined) {
				expect(original.body).toContain(via);
				expect(c.body).toContain(via);
			}
		}
		expect(() => generateMailbox(1, 10, { changes: 1.5 })).toThrow(RangeError);
		// a share of one half: about half of the changeable emails
		const half = generateMailbox(21, MAILBOX_SIZE, { changes: 0.5 }).emails.length - MAILBOX_SIZE;
		expect(half).toBeGreaterThan(changeable.length * 0.35);
		expect(half).toBeLessThan(changeable.length * 0.65);
	});

	it('ask the same question as without; a changed fact is answered by the change, both emails expected', () => {
		let twoEmail = 0;
		const n = 600;
		for (let seed = 0; seed < n; seed++) {
			const plain = scenario(seed);
			const s = scenario(seed, { changes: 1 });
			expect(s.question).toBe(plain.question);
			expect(s.changes).toBe(1);
			expect(s.messageIds[0]).toBe(plain.messageIds[0]);
			const m = mailboxOf(s.mailboxSeed, 1);
			if (s.messageIds.length === 1) {
				expect(s.answer).toBe(plain.answer);
				continue;
			}
			twoEmail++;
			const change = m.byId.get(s.messageIds[1])!;
			expect(change.changes).toMatchObject({ id: plain.messageIds[0], fact: s.fact });
			expect(s.answer).toBe(change.facts[s.fact]);
			expect(s.answer).not.toBe(plain.answer);
			expect(m.byId.get(s.messageIds[0])!.body).not.toContain(s.answer);
			expect(s.followUp).toBe(change.changes!.via); // (none for a meeting or an invitation)
		}
		expect(twoEmail / n).toBeGreaterThan(0.15);
		expect(twoEmail / n).toBeLessThan(0.45);
	});
});
