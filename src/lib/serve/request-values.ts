/**
 * @file The request checks' building blocks: OpenAI's invalid_type / invalid_value errors
 * naming the `param`, and optional typed fields where absent and null mean the same (the
 * openai package sends null for some unset fields).
 */
import { invalidRequest } from './errors';

export function isRecord(x: unknown): x is Record<string, unknown> {
	return typeof x === 'object' && x !== null && !Array.isArray(x);
}

/** A JSON value's kind, as OpenAI's type errors word it. */
export function describe(x: unknown): string {
	if (x === null) return 'null';
	if (Array.isArray(x)) return 'an array';
	return typeof x === 'object' ? 'an object' : `${typeof x} ${JSON.stringify(x)}`;
}

/** The parsed body as an object, or the error OpenAI gives for any other JSON value. */
export function requireObjectBody(body: unknown): Record<string, unknown> {
	if (isRecord(body)) return body;
	throw invalidRequest(
		`The request body must be a JSON object, got ${describe(body)}.`,
		null,
		'invalid_type'
	);
}

export const invalidType = (param: string, want: string, got: unknown) =>
	invalidRequest(
		`Invalid type for '${param}': expected ${want}, but got ${describe(got)}.`,
		param,
		'invalid_type'
	);
export const invalidValue = (param: string, message: string) =>
	invalidRequest(`Invalid value for '${param}': ${message}`, param, 'invalid_value');

/** A number at `param` that passes `isKind` (else a type error) and `check` (else a value error). */
function optionalNumeric(
	body: Record<string, unknown>,
	param: string,
	kind: { is: (v: number) => boolean; want: string },
	check: (v: number) => string | null
): number | undefined {
	const v = body[param];
	if (v === undefined || v === null) return undefined;
	if (typeof v !== 'number' || !kind.is(v)) throw invalidType(param, kind.want, v);
	const problem = check(v);
	if (problem) throw invalidValue(param, problem);
	return v;
}

export const optionalNumber = (
	body: Record<string, unknown>,
	param: string,
	check: (v: number) => string | null
) => optionalNumeric(body, param, { is: Number.isFinite, want: 'a number' }, check);

export const optionalInteger = (
	body: Record<string, unknown>,
	param: string,
	check: (v: number) => string | null
) => optionalNumeric(body, param, { is: Number.isSafeInteger, want: 'an integer' }, check);

export function optionalBoolean(body: Record<string, unknown>, param: string): boolean | undefined {
	const v = body[param];
	if (v === undefined || v === null) return undefined;
	if (typeof v !== 'boolean') throw invalidType(param, 'a boolean', v);
	return v;
}
