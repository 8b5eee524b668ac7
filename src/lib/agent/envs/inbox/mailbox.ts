/**
 * @file The inbox environment's mailbox: a few hundred generated emails, the same for a seed,
 * each of one kind (flight, hotel, meeting, order, invoice, event, parcel, newsletter) stating a
 * few facts. Many emails share a shape, so a search must name the entity (as ART-E's inboxes of
 * thousands). An email's `key` makes it findable, its `facts` are what a question may ask;
 * questions.ts asks only about emails with a unique key.
 *
 * Changes (`{ changes }`): a share of the emails whose facts can move get a later email that
 * changes one, naming the thing by its number or code only, so such a question takes two
 * searches. Change emails come from a generator of their own: without changes a mailbox is as
 * it always was.
 */
import { Rng } from '../../../util/random';
import {
	CITIES,
	AIRLINES,
	HOTELS,
	TOPICS,
	PRODUCTS,
	SHOPS,
	SERVICES,
	EVENTS,
	VENUES,
	STREETS,
	PICKUP_PLACES,
	MONTHS,
	WEEKDAYS,
	pick,
	digits,
	pad2,
	time,
	day,
	sentDate,
	person,
	slug
} from './mailbox-words';
import { changeEmails } from './mailbox-changes';

export type EmailKind =
	| 'flight'
	| 'hotel'
	| 'meeting'
	| 'order'
	| 'invoice'
	| 'event'
	| 'parcel'
	| 'newsletter'
	/** A later email changing one fact of an earlier one (asked about through that one). */
	| 'change';

export interface Email {
	/** 'm' and four digits, unique in its mailbox. */
	id: string;
	/** The sender's name, as search results show it. */
	fromName: string;
	/** The sender's address. */
	fromAddress: string;
	/** The day it was sent, YYYY-MM-DD. */
	date: string;
	subject: string;
	body: string;
	kind: EmailKind;
	/** What identifies it among emails of its kind (questions ask about unique keys only). */
	key: string;
	/** The facts a question may ask for, each written in the body exactly as here. */
	facts: Record<string, string>;
	/**
	 * A change email's: the email and the fact it changes (its new value in `facts`), and the
	 * value it names that email by, when not by what the email names (`via`: its flight
	 * number, booking code, ...).
	 */
	changes?: { id: string; fact: string; via?: string };
}

export interface Mailbox {
	seed: number;
	emails: Email[];
	byId: Map<string, Email>;
	/** The change email of an email's fact, by `${id}/${fact}` (none without changes). */
	changeOf: Map<string, Email>;
}

export interface MailboxOptions {
	/** The share (0..1) of emails with facts that can move that get a change email (default 0). */
	changes?: number;
}

/** Emails in a mailbox unless told otherwise. */
export const MAILBOX_SIZE = 300;

const KINDS: EmailKind[] = [
	'flight',
	'hotel',
	'meeting',
	'order',
	'invoice',
	'event',
	'parcel',
	'newsletter'
];

type Draft = Omit<Email, 'id' | 'date'>;

/** One email of `kind`, drawn from `rng`. */
function draft(kind: EmailKind, rng: Rng): Draft {
	switch (kind) {
		case 'flight': {
			const airline = pick(rng, AIRLINES);
			const city = pick(rng, CITIES);
			const facts = {
				flight: `${airline.code}${digits(rng, 3)}`,
				time: time(rng),
				date: day(rng),
				gate: `${pick(rng, ['A', 'B', 'C', 'D'])}${1 + rng.int(30)}`
			};
			return {
				kind,
				key: city,
				facts,
				fromName: airline.name,
				fromAddress: `bookings@${airline.domain}`,
				subject: `Flight to ${city}`,
				body:
					`Your flight ${facts.flight} to ${city} departs at ${facts.time} on ${facts.date}. ` +
					`Boarding is at gate ${facts.gate}.`
			};
		}
		case 'hotel': {
			const city = pick(rng, CITIES);
			const hotel = pick(rng, HOTELS);
			const facts = { hotel, date: day(rng), code: `H${digits(rng, 4)}` };
			return {
				kind,
				key: city,
				facts,
				fromName: hotel,
				fromAddress: `stay@${slug(hotel)}.com`,
				subject: `Hotel booking in ${city}`,
				body:
					`Your room at the ${hotel} in ${city} is booked. You check in on ${facts.date}. ` +
					`Your booking code is ${facts.code}.`
			};
		}
		case 'meeting': {
			const topic = pick(rng, TOPICS);
			const from = person(rng);
			const facts = {
				day: pick(rng, WEEKDAYS),
				time: time(rng),
				room: `${pick(rng, ['A', 'B', 'C'])}${1 + rng.int(20)}`
			};
			const Topic = topic[0].toUpperCase() + topic.slice(1);
			return {
				kind,
				key: `${topic}|${from.first}`,
				facts,
				fromName: from.name,
				fromAddress: `${from.user}@acme.com`,
				subject: `${Topic} meeting`,
				body:
					`Hi, the ${topic} meeting is on ${facts.day} at ${facts.time} in room ${facts.room}. ` +
					`Thanks, ${from.first}`
			};
		}
		case 'order': {
			const product = pick(rng, PRODUCTS);
			const shop = pick(rng, SHOPS);
			const facts = { number: digits(rng, 5), date: day(rng) };
			return {
				kind,
				key: product,
				facts,
				fromName: shop,
				fromAddress: `orders@${slug(shop)}.com`,
				subject: `Your order: ${product}`,
				body: `Thank you for your order ${facts.number}. Your ${product} will arrive on ${facts.date}.`
			};
		}
		case 'invoice': {
			const service = pick(rng, SERVICES);
			const month = pick(rng, MONTHS);
			const facts = { amount: `$${10 + rng.int(290)}.${pad2(rng.int(100))}`, date: day(rng) };
			const Service = service.name[0].toUpperCase() + service.name.slice(1);
			return {
				kind,
				key: `${service.name}|${month}`,
				facts,
				fromName: service.company,
				fromAddress: `billing@${slug(service.company)}.com`,
				subject: `${Service} invoice for ${month}`,
				body:
					`Your ${service.name} invoice for ${month} is ${facts.amount}. ` +
					`Please pay by ${facts.date}.`
			};
		}
		case 'event': {
			const event = pick(rng, EVENTS);
			const from = person(rng);
			const facts = { venue: pick(rng, VENUES), date: day(rng), time: time(rng) };
			return {
				kind,
				key: `${event}|${from.first}`,
				facts,
				fromName: from.name,
				fromAddress: `${from.user}@mail.com`,
				subject: `Invitation: ${event}`,
				body:
					`${from.first} invites you to a ${event} at ${facts.venue} on ${facts.date}. ` +
					`It starts at ${facts.time}.`
			};
		}
		case 'parcel': {
			const shop = pick(rng, SHOPS);
			const facts = {
				place: `${pick(rng, STREETS)} ${pick(rng, PICKUP_PLACES)}`,
				code: digits(rng, 4),
				date: day(rng)
			};
			return {
				kind,
				key: shop,
				facts,
				fromName: 'QuickPost',
				fromAddress: 'track@quickpost.com',
				subject: `Parcel from ${shop}`,
				body:
					`Your parcel from ${shop} is waiting at the ${facts.place}. ` +
					`Pick it up by ${facts.date} with code ${facts.code}.`
			};
		}
		case 'newsletter': {
			const shop = pick(rng, SHOPS);
			const a = pick(rng, PRODUCTS);
			const b = pick(rng, PRODUCTS);
			return {
				kind,
				key: shop,
				facts: {},
				fromName: shop,
				fromAddress: `news@${slug(shop)}.com`,
				subject: `${shop} news`,
				body: `This week at ${shop}: the ${a} and the ${b} are on sale. See you soon!`
			};
		}
		case 'change':
			throw new RangeError('change emails are drawn by changeEmails, after the others');
	}
}

/**
 * The mailbox of `seed`: `size` emails, each kind equally likely, ids unique; with
 * `changes`, the change emails of a share of them besides (see the file's doc).
 */
export function generateMailbox(
	seed: number,
	size = MAILBOX_SIZE,
	options: MailboxOptions = {}
): Mailbox {
	if (!Number.isInteger(size) || size < 1 || size > 9000)
		throw new RangeError(`a mailbox holds 1 to 9000 emails, not ${size}`);
	const share = options.changes ?? 0;
	if (!(share >= 0 && share <= 1))
		throw new RangeError(`changes is a share from 0 to 1, not ${share}`);
	const rng = new Rng(seed);
	const used = new Set<string>();
	const emails: Email[] = [];
	for (let i = 0; i < size; i++) {
		let id: string;
		do id = `m${1000 + rng.int(9000)}`;
		while (used.has(id));
		used.add(id);
		const date = sentDate(rng);
		emails.push({ id, date, ...draft(pick(rng, KINDS), rng) });
	}
	if (share > 0) emails.push(...changeEmails(emails, used, seed, share));
	const changeOf = new Map(
		emails.flatMap((e) => (e.changes ? [[`${e.changes.id}/${e.changes.fact}`, e] as const] : []))
	);
	return { seed, emails, byId: new Map(emails.map((e) => [e.id, e])), changeOf };
}

/** The email as read_email returns it (and as a search result shows part of it). */
export function emailRecord(email: Email) {
	return {
		message_id: email.id,
		from: `${email.fromName} <${email.fromAddress}>`,
		date: email.date,
		subject: email.subject,
		body: email.body
	};
}
