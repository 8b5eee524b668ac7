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

export const invalidType = (param: string, want: string, got: unknown) =>
	invalidRequest(
		`Invalid type for '${param}': expected ${want}, but got ${describe(got)}.`,
		param,
		'invalid_type'
	);
export const invalidValue = (param: string, message: string) =>
	invalidRequest(`Invalid value for '${param}': ${message}`, param, 'invalid_value');

export function optionalNumber(
	body: Record<string, unknown>,
	param: string,
	check: (v: number) => string | null
): number | undefined {
	const v = body[param];
	if (v === undefined || v === null) return undefined;
	if (typeof v !== 'number' || !Number.isFinite(v)) throw invalidType(param, 'a number', v);
	const problem = check(v);
	if (problem) throw invalidValue(param, problem);
	return v;
}

export function optionalInteger(
	body: Record<string, unknown>,
	param: string,
	check: (v: number) => string | null
): number | undefined {
	const v = body[param];
	if (v === undefined || v === null) return undefined;
	if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw invalidType(param, 'an integer', v);
	const problem = check(v);
	if (problem) throw invalidValue(param, problem);
	return v;
}

export function optionalBoolean(body: Record<string, unknown>, param: string): boolean | undefined {
	const v = body[param];
	if (v === undefined || v === null) return undefined;
	if (typeof v !== 'boolean') throw invalidType(param, 'a boolean', v);
	return v;
}
