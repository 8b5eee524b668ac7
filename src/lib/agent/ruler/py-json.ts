/**
 * @file `pyJsonDumps(value)`: the text Python's `json.dumps(value)` writes with its
 * defaults, because ART serialises every message list it sends to RULER's judge that way
 * and a judge should see byte for byte what ART sends (prompt.ts). Checked against Python
 * itself: tests/fixtures/ruler/python.json and judge-messages.json (made by
 * tools/ruler-fixtures.py).
 *
 * Python's defaults: separators ", " and ": "; ensure_ascii (every character outside
 * space..~ written \uXXXX in lowercase hex; astral characters as their UTF-16 surrogate
 * pair, which is what a JavaScript string holds anyway; lone surrogates kept as \udXXX);
 * the short escapes \" \\ \n \r \t \b \f; "/" not escaped; keys in the order given; None,
 * True, False as null, true, false; allow_nan (NaN, Infinity, -Infinity written bare, as
 * Python does, not valid JSON).
 *
 * Numbers: JavaScript has one number type where Python has int and float, so 1 and 1.0 are
 * the same value here. A safe integer (|x| <= 2^53 - 1) is written as Python writes an
 * int ("3"); every other number as Python's float repr: the shortest digits that read back
 * to the same double (JavaScript's Number.prototype.toString finds the same digits), in
 * fixed notation when the decimal exponent e satisfies -4 <= e < 16 ("0.0001", "1e-05",
 * "1000000000000000.2", "1e+16"), with ".0" on an integral value ("9007199254740992.0"),
 * an exponent of at least two digits with its sign ("1.5e-07", "1e+300"), and "-0.0" for
 * negative zero. So a float that Python holds with an integral value below 2^53 (2.0) is
 * written "2" here, where Python writes "2.0": the one difference, unavoidable once the
 * value is a JavaScript number. Messages read from JSON lose nothing else.
 *
 * Objects: own enumerable string keys in JavaScript's order, which is insertion order
 * except that integer-like keys ("0", "17") come first in ascending order (a dict with
 * such keys would be written in another order than Python's). Properties whose value is
 * undefined are left out and undefined in an array is null, as JSON.stringify does; a
 * `toJSON` method is honoured as JSON.stringify honours it; bigint is written as an int;
 * functions and symbols are refused (Python: "Object of type ... is not JSON
 * serializable").
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
