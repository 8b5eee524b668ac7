/**
 * @file The inbox environment's mailbox: a few hundred generated emails, the same for the
 * same seed. Each email is of one kind (a flight, a hotel booking, a meeting, an order, an
 * invoice, an invitation, a parcel, or a newsletter that answers nothing) and states a few
 * facts in one to three short sentences. Every kind has many emails of the same shape about
 * other entities (other cities, other products, other organizers), so a search has to name
 * the entity to find the right one, as in ART-E where an inbox holds thousands of messages
 * and a question is about one of them.
 *
 * The vocabulary is small on purpose (a few hundred words, times, dates and codes): a model
 * of a few million parameters with a tokenizer learned from this text should be able to
 * copy keywords from a question, an id from search results and an answer from a body.
 *
 * Each email records its `key` (what makes it findable: a flight's city, a meeting's topic
 * and organizer) and its `facts` (what a question may ask); questions.ts asks only about
 * emails whose key is unique in the mailbox, so every question has exactly one answer.
 *
 * Changes (`generateMailbox(seed, size, { changes })`): a share of the emails whose facts can
 * move (a flight's time or gate, a hotel's or an order's date, a parcel's pickup place, a
 * meeting's or an invitation's day, time or place) get a later email that changes one of
 * them, so a question about that fact needs two emails (ART-E's questions need one or two):
 * the first names the thing, the later one the value that holds now. A flight's, booking's,
 * order's or parcel's change names it by its number or code only ("Flight SJ123 now boards
 * at gate B7."), so "Which gate does my flight to Oslo board at?" takes two searches: the
 * second for the number the first email gives. Without changes (the default) a mailbox is exactly what
 * it was before changes existed: the change emails are drawn after the others, from a
 * generator of their own.
 */
import { Rng } from '../../../util/random';

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

export const FIRST_NAMES = [
	'Anna', 'Ben', 'Clara', 'David', 'Emma', 'Felix', 'Grace', 'Hugo', 'Ivy', 'Jack', 'Kate',
	'Leo', 'Mia', 'Noah', 'Olga', 'Paul', 'Rosa', 'Sam', 'Tara', 'Victor', 'Wendy', 'Yusuf',
	'Zoe', 'Omar'
]; // prettier-ignore
export const LAST_NAMES = [
	'Adams', 'Brown', 'Chen', 'Diaz', 'Evans', 'Fox', 'Garcia', 'Hill', 'Ito', 'Khan', 'Lopez',
	'Moore', 'Novak', 'Park', 'Reed', 'Silva'
]; // prettier-ignore
export const CITIES = [
	'Lisbon', 'Oslo', 'Rome', 'Paris', 'Berlin', 'Madrid', 'Vienna', 'Prague', 'Dublin', 'Athens',
	'Zurich', 'Warsaw', 'Milan', 'Porto', 'Munich', 'Geneva', 'Lyon', 'Seville', 'Krakow',
	'Bergen', 'Nice', 'Split', 'Tallinn', 'Riga'
]; // prettier-ignore
const AIRLINES = [
	{ name: 'SkyJet', code: 'SJ', domain: 'skyjet.com' },
	{ name: 'Nordair', code: 'NA', domain: 'nordair.com' },
	{ name: 'Bluewing', code: 'BW', domain: 'bluewing.com' },
	{ name: 'Aerolux', code: 'AX', domain: 'aerolux.com' }
];
const HOTELS = [
	'Harbor Hotel', 'Grand Plaza', 'Park Inn', 'Sea View Hotel', 'City Lodge', 'Royal Hotel',
	'Garden Inn', 'Hotel Central'
]; // prettier-ignore
export const TOPICS = [
	'budget', 'hiring', 'design', 'sales', 'launch', 'roadmap', 'training', 'security',
	'marketing', 'support', 'research', 'quality', 'travel', 'safety', 'product', 'planning'
]; // prettier-ignore
export const PRODUCTS = [
	'desk lamp', 'coffee maker', 'rain jacket', 'office chair', 'yoga mat', 'kettle', 'backpack',
	'phone case', 'water bottle', 'toaster', 'blender', 'headphones', 'keyboard', 'bike helmet',
	'tea set', 'wall clock', 'table fan', 'camera bag', 'sun hat', 'travel mug', 'bookshelf',
	'pillow', 'shoe rack', 'plant pot'
]; // prettier-ignore
export const SHOPS = [
	'Nova Store', 'Book Barn', 'Tech Hub', 'Green Grocer', 'Pet World', 'Style Box',
	'Home Goods', 'Toy Land', 'Sport Zone', 'Art Corner', 'Music Box', 'Kitchen King'
]; // prettier-ignore
export const SERVICES = [
	{ name: 'internet', company: 'FastNet' },
	{ name: 'phone', company: 'CallCo' },
	{ name: 'water', company: 'City Water' },
	{ name: 'power', company: 'Bright Energy' },
	{ name: 'gym', company: 'FitLife' },
	{ name: 'insurance', company: 'SafeHome' },
	{ name: 'parking', company: 'ParkRight' },
	{ name: 'storage', company: 'BoxSpace' }
];
export const EVENTS = [
	'birthday party', 'dinner', 'picnic', 'barbecue', 'concert', 'game night', 'book club',
	'brunch', 'movie night', 'wedding', 'housewarming', 'quiz night'
]; // prettier-ignore
const VENUES = [
	'Blue Cafe', 'Green Park', 'City Hall', 'Old Mill', 'River Inn', 'Sun Garden', 'Star Club',
	'Lake House', 'Rose Hall', 'Oak Tavern', 'Hill Top Bar', 'Corner Bistro'
]; // prettier-ignore
const STREETS = [
	'Elm Street', 'Main Street', 'Park Road', 'Mill Lane', 'High Street', 'Bridge Road',
	'Oak Avenue', 'King Street'
]; // prettier-ignore
const PICKUP_PLACES = ['post office', 'kiosk', 'parcel locker'];
export const MONTHS = [
	'January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September',
	'October', 'November', 'December'
]; // prettier-ignore
const WEEKDAYS = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday'];
const DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
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

const pick = <T>(rng: Rng, items: readonly T[]): T => items[rng.int(items.length)];
const digits = (rng: Rng, n: number): string => String(10 ** (n - 1) + rng.int(9 * 10 ** (n - 1)));
const pad2 = (n: number) => String(n).padStart(2, '0');
/** A time of day on the quarter hour, 07:00 to 20:45. */
const time = (rng: Rng) => `${pad2(7 + rng.int(14))}:${pad2(15 * rng.int(4))}`;
/** A day as the body writes it, e.g. "May 12". */
const day = (rng: Rng) => {
	const m = rng.int(12);
	return `${MONTHS[m]} ${1 + rng.int(DAYS_IN_MONTH[m] - 1)}`;
};
/** The sending day, in 2024. */
const sentDate = (rng: Rng) => {
	const m = rng.int(12);
	return `2024-${pad2(m + 1)}-${pad2(1 + rng.int(DAYS_IN_MONTH[m] - 1))}`;
};
const person = (rng: Rng) => {
	const first = pick(rng, FIRST_NAMES);
	const last = pick(rng, LAST_NAMES);
	return { first, name: `${first} ${last}`, user: `${first}.${last}`.toLowerCase() };
};
const slug = (name: string) => name.toLowerCase().replace(/[^a-z]/g, '');

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
 * Facts that a later email may change, by kind, and how a new value is drawn; `via`: the fact
 * by which the change names the email (a flight's number, a booking's code), never the thing
 * a question names (the city, the product), so that change is found by a second search. A
 * meeting's or an invitation's change names the meeting as the email does (topic and
 * organizer): the first search finds both.
 */
const CHANGEABLE: Partial<
	Record<EmailKind, { via?: string; facts: Record<string, (rng: Rng) => string> }>
> = {
	flight: {
		via: 'flight',
		facts: { time, gate: (rng) => `${pick(rng, ['A', 'B', 'C', 'D'])}${1 + rng.int(30)}` }
	},
	hotel: { via: 'code', facts: { date: day } },
	order: { via: 'number', facts: { date: day } },
	parcel: {
		via: 'code',
		facts: { place: (rng) => `${pick(rng, STREETS)} ${pick(rng, PICKUP_PLACES)}` }
	},
	meeting: {
		facts: {
			day: (rng) => pick(rng, WEEKDAYS),
			time,
			room: (rng) => `${pick(rng, ['A', 'B', 'C'])}${1 + rng.int(20)}`
		}
	},
	event: { facts: { venue: (rng) => pick(rng, VENUES), date: day, time } }
};

/** How a change of `e`'s `fact` to `value` reads, [subject, body]; `via` names `e` in it. */
function changeText(
	e: Email,
	fact: string,
	via: string | undefined,
	value: string
): [string, string] {
	const [a, b] = e.key.split('|');
	switch (e.kind) {
		case 'flight':
			return fact === 'gate'
				? [`Gate change for flight ${via}`, `Flight ${via} now boards at gate ${value}.`]
				: [`New time for flight ${via}`, `Flight ${via} now departs at ${value}.`];
		case 'hotel':
			return [`Booking ${via}: new date`, `Your check-in for booking ${via} moved to ${value}.`];
		case 'order':
			return [`Order ${via} is late`, `Your order ${via} will now arrive on ${value}.`];
		case 'parcel':
			return [
				`Parcel ${via} moved`,
				`The parcel with pickup code ${via} now waits at the ${value}.`
			];
		case 'meeting': {
			const now =
				fact === 'room'
					? `is now in room ${value}`
					: fact === 'day'
						? `is now on ${value}`
						: `now starts at ${value}`;
			return [`${e.subject} moved`, `Hi, the ${a} meeting ${now}. Thanks, ${b}`];
		}
		case 'event': {
			const now =
				fact === 'venue'
					? `is now at ${value}`
					: fact === 'date'
						? `is now on ${value}`
						: `now starts at ${value}`;
			return [`Change: ${a}`, `${b}'s ${a} ${now}.`];
		}
		default:
			throw new RangeError(`a ${e.kind} email has no facts that change`);
	}
}

/** A day of 2024 no earlier than `date` (YYYY-MM-DD), up to a fortnight later. */
function laterDate(date: string, rng: Rng): string {
	const [y, m, d] = date.split('-').map(Number);
	const t = new Date(Date.UTC(y, m - 1, d + rng.int(15)));
	const last = Date.UTC(2024, 11, 31);
	const when = new Date(Math.min(t.getTime(), last));
	return `2024-${pad2(when.getUTCMonth() + 1)}-${pad2(when.getUTCDate())}`;
}

/**
 * The change emails of `emails` (new ids beside `used`), from their own generator: each email
 * with changeable facts gets one with probability `share`, changing one fact to a new value.
 */
function changeEmails(emails: Email[], used: Set<string>, seed: number, share: number): Email[] {
	const rng = new Rng((Math.imul(seed, 0x9e3779b1) ^ 0x7f4a7c15) >>> 0);
	const out: Email[] = [];
	for (const e of emails) {
		const changeable = CHANGEABLE[e.kind];
		if (!changeable || rng.next() >= share) continue;
		const fact = pick(rng, Object.keys(changeable.facts));
		let value: string;
		do value = changeable.facts[fact](rng);
		while (value === e.facts[fact]);
		const via = changeable.via === undefined ? undefined : e.facts[changeable.via];
		let id: string;
		do id = `m${1000 + rng.int(9000)}`;
		while (used.has(id));
		used.add(id);
		const [subject, body] = changeText(e, fact, via, value);
		out.push({
			id,
			date: laterDate(e.date, rng),
			fromName: e.fromName,
			fromAddress: e.fromAddress,
			subject,
			body,
			kind: 'change',
			key: `${e.kind}/${e.key}`,
			facts: { [fact]: value },
			changes: { id: e.id, fact, ...(via === undefined ? {} : { via }) }
		});
	}
	return out;
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
