/**
 * @file `pyEqual(a, b)`: Python's `==` on JSON-like values, which ART uses for the message
 * lists' common prefix (TabRL: duplicate trajectories): dicts by keys whatever the order,
 * numbers and booleans as numbers (True == 1), strings by code unit, undefined properties
 * absent, NaN equal to nothing. Checked against Python (tests/fixtures/ruler/python.json).
 */
export function pyEqual(a: unknown, b: unknown): boolean {
	if (isNumeric(a) && isNumeric(b)) return Number(a) === Number(b);
	if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return a === b;
	if (Array.isArray(a) || Array.isArray(b)) {
		if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
		return a.every((x, i) => pyEqual(x, b[i]));
	}
	const ka = definedKeys(a);
	const kb = definedKeys(b);
	if (ka.length !== kb.length) return false;
	const B = b as Record<string, unknown>;
	const A = a as Record<string, unknown>;
	return ka.every((k) => B[k] !== undefined && Object.hasOwn(B, k) && pyEqual(A[k], B[k]));
}

function isNumeric(v: unknown): v is number | boolean | bigint {
	return typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint';
}

function definedKeys(o: object): string[] {
	return Object.keys(o).filter((k) => (o as Record<string, unknown>)[k] !== undefined);
}
