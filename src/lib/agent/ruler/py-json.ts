/**
 * @file `pyJsonDumps(value)`: Python's `json.dumps` with its defaults, so the judge sees
 * byte for byte what ART sends: ", " and ": ", ensure_ascii, short escapes, NaN and
 * Infinity bare; safe integers as ints, other numbers as Python's float repr. The one
 * unavoidable difference: an integral float below 2^53 (2.0) is written "2". Object keys
 * in JavaScript's order (integer-like first). Checked against Python's own output.
 */

const SHORT_ESCAPES: Record<string, string> = {
	'"': '\\"',
	'\\': '\\\\',
	'\n': '\\n',
	'\r': '\\r',
	'\t': '\\t',
	'\b': '\\b',
	'\f': '\\f'
};

/** A string as Python's json.dumps writes it with ensure_ascii=True. */
export function pyJsonString(s: string): string {
	let out = '"';
	let start = 0; // the run of characters written as they are
	for (let i = 0; i < s.length; i++) {
		const c = s.charCodeAt(i);
		if (c >= 0x20 && c <= 0x7e && c !== 0x22 && c !== 0x5c) continue;
		out += s.slice(start, i);
		out += SHORT_ESCAPES[s[i]] ?? '\\u' + c.toString(16).padStart(4, '0');
		start = i + 1;
	}
	return out + s.slice(start) + '"';
}

/** A number as Python writes an int (safe integers) or a float (repr) in JSON. */
export function pyJsonNumber(x: number): string {
	if (Number.isNaN(x)) return 'NaN';
	if (x === Infinity) return 'Infinity';
	if (x === -Infinity) return '-Infinity';
	if (Object.is(x, -0)) return '-0.0';
	if (Number.isSafeInteger(x)) return String(x);
	return pyFloatRepr(x);
}

/** Python's repr of a finite float (short repr, 'r' format). */
export function pyFloatRepr(x: number): string {
	if (Object.is(x, -0)) return '-0.0';
	const sign = x < 0 ? '-' : '';
	// toExponential() with no argument gives the shortest digits that round-trip.
	const [mantissa, exp] = Math.abs(x).toExponential().split('e');
	const digits = mantissa.replace('.', '');
	const e = Number(exp);
	if (e < -4 || e >= 16) {
		const frac = digits.length > 1 ? `.${digits.slice(1)}` : '';
		const expDigits = String(Math.abs(e)).padStart(2, '0');
		return `${sign}${digits[0]}${frac}e${e < 0 ? '-' : '+'}${expDigits}`;
	}
	if (e < 0) return `${sign}0.${'0'.repeat(-e - 1)}${digits}`;
	const whole = digits.slice(0, e + 1).padEnd(e + 1, '0');
	const frac = digits.slice(e + 1) || '0';
	return `${sign}${whole}.${frac}`;
}

/** Python's `json.dumps(value)` with its default arguments (see the file's comment). */
export function pyJsonDumps(value: unknown): string {
	const text = write(value, new Set());
	if (text === undefined)
		throw new TypeError(`Object of type ${typeof value} is not JSON serializable`);
	return text;
}

function write(value: unknown, open: Set<object>): string | undefined {
	if (
		value !== null &&
		typeof value === 'object' &&
		typeof (value as { toJSON?: unknown }).toJSON === 'function'
	)
		value = (value as { toJSON(): unknown }).toJSON();
	switch (typeof value) {
		case 'undefined':
			return undefined;
		case 'string':
			return pyJsonString(value);
		case 'number':
			return pyJsonNumber(value);
		case 'boolean':
			return value ? 'true' : 'false';
		case 'bigint':
			return value.toString();
		case 'function':
		case 'symbol':
			throw new TypeError(`Object of type ${typeof value} is not JSON serializable`);
	}
	if (value === null) return 'null';
	const obj = value as object;
	if (open.has(obj)) throw new TypeError('Circular reference detected');
	open.add(obj);
	try {
		if (Array.isArray(obj)) return `[${obj.map((v) => write(v, open) ?? 'null').join(', ')}]`;
		const parts: string[] = [];
		for (const [k, v] of Object.entries(obj)) {
			const text = write(v, open);
			if (text !== undefined) parts.push(`${pyJsonString(k)}: ${text}`);
		}
		return `{${parts.join(', ')}}`;
	} finally {
		open.delete(obj);
	}
}
