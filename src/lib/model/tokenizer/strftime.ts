/**
 * @file Python's `datetime.strftime` for the directives chat templates use (Llama 3.x writes
 * "Today Date: 26 Jul 2024" with `strftime_now("%d %b %Y")`). Names are the C locale's
 * English ones, as Python prints them on the GPU machine; the browser's locale plays no
 * part. Local time, like `datetime.now()`. An unknown directive is written as it is.
 */

const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const MONTHS = [
	'January',
	'February',
	'March',
	'April',
	'May',
	'June',
	'July',
	'August',
	'September',
	'October',
	'November',
	'December'
];

const pad = (n: number, width = 2): string => String(n).padStart(width, '0');

function dayOfYear(d: Date): number {
	const y = d.getFullYear();
	return (Date.UTC(y, d.getMonth(), d.getDate()) - Date.UTC(y, 0, 1)) / 86_400_000 + 1;
}

export function strftime(date: Date, format: string): string {
	return format.replace(/%([a-zA-Z%])/g, (whole, c: string) => {
		const h = date.getHours();
		switch (c) {
			case 'Y':
				return String(date.getFullYear());
			case 'y':
				return pad(date.getFullYear() % 100);
			case 'm':
				return pad(date.getMonth() + 1);
			case 'd':
				return pad(date.getDate());
			case 'e':
				return String(date.getDate()).padStart(2, ' ');
			case 'j':
				return pad(dayOfYear(date), 3);
			case 'H':
				return pad(h);
			case 'I':
				return pad(h % 12 === 0 ? 12 : h % 12);
			case 'M':
				return pad(date.getMinutes());
			case 'S':
				return pad(date.getSeconds());
			case 'p':
				return h < 12 ? 'AM' : 'PM';
			case 'b':
			case 'h':
				return MONTHS[date.getMonth()].slice(0, 3);
			case 'B':
				return MONTHS[date.getMonth()];
			case 'a':
				return DAYS[date.getDay()].slice(0, 3);
			case 'A':
				return DAYS[date.getDay()];
			case 'w':
				return String(date.getDay());
			case '%':
				return '%';
			default:
				return whole;
		}
	});
}
