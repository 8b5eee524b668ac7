/**
 * @file Questions about a mailbox, and scenarios: a scenario seed picks a mailbox and one
 * question whose answer is written in exactly one of its emails. A question names the
 * email's key (a flight's city, a meeting's topic and organizer, ...) and asks for one fact
 * of it (a time, a date, a room, a code, an amount, a place); the answer is that fact as the
 * body writes it, so it can be copied.
 *
 * Mailboxes are shared by consecutive scenario seeds: the mailbox seed is
 * floor(seed / QUESTIONS_PER_MAILBOX), so training (small seeds) and evaluation (seeds from
 * EVAL_SEED on: ../seeds.ts) never share a mailbox, and a held-out question is about emails the model has
 * never seen. Only emails whose key is unique in their mailbox are asked about.
 *
 * With changes (`scenario(seed, { changes })`, mailbox.ts): the mailbox also holds change
 * emails, and a question about a fact that a later email changed is answered by two emails:
 * its answer is the new value, its `messageIds` the email and its change, its `followUp` the
 * number or code the change names the email by. The same seed asks the same question with
 * or without changes.
 */
import { Rng } from '../../../util/random';
import {
	generateMailbox,
	MAILBOX_SIZE,
	type Email,
	type EmailKind,
	type Mailbox,
	type MailboxOptions
} from './mailbox';

/** Consecutive scenario seeds that share one mailbox. */
export const QUESTIONS_PER_MAILBOX = 16;

export interface Question {
	question: string;
	/** The expected answer, as written in the email. */
	answer: string;
	/** The email(s) holding the answer. */
	messageIds: string[];
}

export interface Scenario extends Question {
	seed: number;
	mailboxSeed: number;
	kind: EmailKind;
	/** Which fact of the email is asked for. */
	fact: string;
	/** The mailbox's share of changed emails, when it has changes (absent: none). */
	changes?: number;
	/** A two-email question's: what names the first email in its change (its number or code),
	 * the keyword that finds the change. */
	followUp?: string;
	/**
	 * The later email that changes the asked one, whatever fact it changes (in `messageIds`
	 * only when it changes the asked fact), and what it names the asked email by.
	 */
	changedBy?: { id: string; via?: string };
}

const possessive = (name: string) => `${name}'s`;

/** The questions one email can answer: [fact, question] pairs (none for a newsletter). */
export function questionsFor(email: Email): [string, string][] {
	const [a, b] = email.key.split('|');
	switch (email.kind) {
		case 'flight':
			return [
				['time', `What time does my flight to ${a} depart?`],
				['flight', `What is the flight number of my flight to ${a}?`],
				['gate', `Which gate does my flight to ${a} board at?`]
			];
		case 'hotel':
			return [
				['code', `What is the booking code for my hotel in ${a}?`],
				['date', `When do I check in at my hotel in ${a}?`],
				['hotel', `Which hotel is my room in ${a} at?`]
			];
		case 'meeting':
			return [
				['room', `Which room is the ${a} meeting with ${b} in?`],
				['time', `What time is the ${a} meeting with ${b}?`],
				['day', `Which day is the ${a} meeting with ${b} on?`]
			];
		case 'order':
			return [
				['date', `When will my ${a} arrive?`],
				['number', `What is the order number for my ${a}?`]
			];
		case 'invoice':
			return [
				['amount', `How much is my ${a} invoice for ${b}?`],
				['date', `By when must I pay my ${a} invoice for ${b}?`]
			];
		case 'event':
			return [
				['venue', `Where is ${possessive(b)} ${a}?`],
				['date', `Which day is ${possessive(b)} ${a}?`],
				['time', `What time does ${possessive(b)} ${a} start?`]
			];
		case 'parcel':
			return [
				['place', `Where can I pick up my parcel from ${a}?`],
				['code', `What is the pickup code for my parcel from ${a}?`]
			];
		case 'newsletter':
		case 'change': // (asked about through the email it changes)
			return [];
	}
}

/** Emails a question may be about: of a kind with questions, key unique in the mailbox. */
export function answerableEmails(mailbox: Mailbox): Email[] {
	const count = new Map<string, number>();
	const tag = (e: Email) => `${e.kind}/${e.key}`;
	for (const e of mailbox.emails) count.set(tag(e), (count.get(tag(e)) ?? 0) + 1);
	return mailbox.emails.filter((e) => questionsFor(e).length > 0 && count.get(tag(e)) === 1);
}

/** The mailbox seed of a scenario seed. */
export function mailboxSeedOf(seed: number): number {
	return Math.floor(seed / QUESTIONS_PER_MAILBOX);
}

const cache = new Map<string, { mailbox: Mailbox; answerable: Email[] }>();
const CACHE_SIZE = 8;

/** The mailbox of a mailbox seed, kept for the next few calls (scenarios share them). */
export function mailboxOf(mailboxSeed: number, changes = 0): Mailbox {
	return cached(mailboxSeed, changes).mailbox;
}

function cached(mailboxSeed: number, changes: number) {
	const key = `${mailboxSeed}/${changes}`;
	let entry = cache.get(key);
	if (!entry) {
		const mailbox = generateMailbox(mailboxSeed, MAILBOX_SIZE, { changes });
		entry = { mailbox, answerable: answerableEmails(mailbox) };
		if (cache.size >= CACHE_SIZE) cache.delete(cache.keys().next().value as string);
		cache.set(key, entry);
	}
	return entry;
}

/**
 * The scenario of a seed (a non-negative integer): its mailbox and one question; with
 * `changes`, in a mailbox with that share of changed emails (see the file's doc).
 */
export function scenario(seed: number, mailboxOptions: MailboxOptions = {}): Scenario {
	if (!Number.isSafeInteger(seed) || seed < 0)
		throw new RangeError(`a scenario seed is a non-negative integer, not ${seed}`);
	const share = mailboxOptions.changes ?? 0;
	const mailboxSeed = mailboxSeedOf(seed);
	const { mailbox, answerable } = cached(mailboxSeed, share);
	// The question's own generator: mixed so that neighbouring seeds draw unrelated questions.
	const rng = new Rng(Math.imul(seed ^ 0x5bd1e995, 0x27d4eb2d) ^ (seed >>> 16));
	const email = answerable[rng.int(answerable.length)];
	const options = questionsFor(email);
	const [fact, question] = options[rng.int(options.length)];
	// an email has one change at most: of the asked fact (a two-email question) or another
	const changedBy = Object.keys(email.facts)
		.map((f) => mailbox.changeOf.get(`${email.id}/${f}`))
		.find((e) => e !== undefined);
	const change = changedBy?.changes!.fact === fact ? changedBy : undefined;
	return {
		seed,
		mailboxSeed,
		kind: email.kind,
		fact,
		question,
		// a fact changed later: the change holds the answer, both emails are the question's
		...(change
			? {
					answer: change.facts[fact],
					messageIds: [email.id, change.id],
					...(change.changes!.via === undefined ? {} : { followUp: change.changes!.via })
				}
			: { answer: email.facts[fact], messageIds: [email.id] }),
		...(changedBy
			? {
					changedBy: {
						id: changedBy.id,
						...(changedBy.changes!.via === undefined ? {} : { via: changedBy.changes!.via })
					}
				}
			: {}),
		...(share > 0 ? { changes: share } : {})
	};
}
