/**
 * @file Change emails (mailbox.ts, `{ changes }`): a later email that moves one fact of an
 * earlier one (a flight's gate, a booking's date), naming it by its number or code only, so a
 * question about that fact takes two searches.
 */
import { Rng } from '../../../util/random';
import type { Email, EmailKind } from './mailbox';
import { day, pad2, pick, PICKUP_PLACES, STREETS, time, VENUES, WEEKDAYS } from './mailbox-words';
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
export function changeEmails(
	emails: Email[],
	used: Set<string>,
	seed: number,
	share: number
): Email[] {
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
