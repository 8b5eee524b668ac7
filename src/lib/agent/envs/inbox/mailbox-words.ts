/**
 * @file The mailbox's vocabulary (mailbox.ts): names, places, products, dates. Small on
 * purpose: a model of a few million parameters must copy keywords from a question, an id from
 * search results and an answer from a body. Also the draws that use it (a time, a day, a
 * person).
 */
import type { Rng } from '../../../util/random';

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
export const AIRLINES = [
	{ name: 'SkyJet', code: 'SJ', domain: 'skyjet.com' },
	{ name: 'Nordair', code: 'NA', domain: 'nordair.com' },
	{ name: 'Bluewing', code: 'BW', domain: 'bluewing.com' },
	{ name: 'Aerolux', code: 'AX', domain: 'aerolux.com' }
];
export const HOTELS = [
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
export const VENUES = [
	'Blue Cafe', 'Green Park', 'City Hall', 'Old Mill', 'River Inn', 'Sun Garden', 'Star Club',
	'Lake House', 'Rose Hall', 'Oak Tavern', 'Hill Top Bar', 'Corner Bistro'
]; // prettier-ignore
export const STREETS = [
	'Elm Street', 'Main Street', 'Park Road', 'Mill Lane', 'High Street', 'Bridge Road',
	'Oak Avenue', 'King Street'
]; // prettier-ignore
export const PICKUP_PLACES = ['post office', 'kiosk', 'parcel locker'];
export const MONTHS = [
	'January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September',
	'October', 'November', 'December'
]; // prettier-ignore
export const WEEKDAYS = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday'];
export const DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

export const pick = <T>(rng: Rng, items: readonly T[]): T => items[rng.int(items.length)];
export const digits = (rng: Rng, n: number): string =>
	String(10 ** (n - 1) + rng.int(9 * 10 ** (n - 1)));
export const pad2 = (n: number) => String(n).padStart(2, '0');
/** A time of day on the quarter hour, 07:00 to 20:45. */
export const time = (rng: Rng) => `${pad2(7 + rng.int(14))}:${pad2(15 * rng.int(4))}`;
/** A day as the body writes it, e.g. "May 12". */
export const day = (rng: Rng) => {
	const m = rng.int(12);
	return `${MONTHS[m]} ${1 + rng.int(DAYS_IN_MONTH[m] - 1)}`;
};
/** The sending day, in 2024. */
export const sentDate = (rng: Rng) => {
	const m = rng.int(12);
	return `2024-${pad2(m + 1)}-${pad2(1 + rng.int(DAYS_IN_MONTH[m] - 1))}`;
};
export const person = (rng: Rng) => {
	const first = pick(rng, FIRST_NAMES);
	const last = pick(rng, LAST_NAMES);
	return { first, name: `${first} ${last}`, user: `${first}.${last}`.toLowerCase() };
};
export const slug = (name: string) => name.toLowerCase().replace(/[^a-z]/g, '');
