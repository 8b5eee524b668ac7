/**
 * @file `pyEqual(a, b)`: Python's `==` on JSON-like values, which ART uses to find the
 * message lists' longest common prefix (and TabRL to find duplicate trajectories): dicts
 * are equal with the same keys and equal values whatever the key order, lists element by
 * element, and numbers and booleans compare as numbers (True == 1, False == 0 == -0.0).
 * Strings compare by code unit (no Unicode normalisation: "é" != "e\u0301"). null equals
 * only null; a property whose value is undefined counts as absent (as in JSON). NaN equals
 * nothing, itself included (Python's `==` on two NaN objects from parsed JSON). Checked
 * against Python in tests/fixtures/ruler/python.json.
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
