/**
 * @file Makes @huggingface/jinja 0.5.x's `strip`, `lstrip` and `rstrip` Python's (they
 * ignore `chars` and trim JavaScript's whitespace): Qwen3's template strips '\n' only, and
 * lost spaces transformers keeps. The value classes are not exported, so the `builtins`
 * getter of StringValue's prototype (reached through Environment.set) is wrapped once; if
 * the internals change, nothing is patched and the Qwen3 whitespace test fails.
 */

import { Environment } from '@huggingface/jinja';

/** Python's str.isspace() set (what str.strip() with no argument removes). */
const PY_WHITESPACE = new Set(
	'\t\n\v\f\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000'
);

/** Python's str.strip / lstrip / rstrip: `chars` null or absent means whitespace. */
export function pyStrip(
	s: string,
	chars: string | null | undefined,
	mode: 'both' | 'left' | 'right'
): string {
	const set = chars === null || chars === undefined ? PY_WHITESPACE : new Set(chars);
	const cps = Array.from(s); // by code point, as Python strings are
	let start = 0;
	let end = cps.length;
	if (mode !== 'right') while (start < end && set.has(cps[start])) start++;
	if (mode !== 'left') while (end > start && set.has(cps[end - 1])) end--;
	return cps.slice(start, end).join('');
}

interface RuntimeValueLike {
	type: string;
	value: unknown;
}
type FunctionValueCtor = new (
	fn: (args: RuntimeValueLike[]) => RuntimeValueLike
) => RuntimeValueLike;
type StringValueCtor = new (s: string) => RuntimeValueLike;

let state: 'unpatched' | 'patched' | 'failed' = 'unpatched';

/** Applies the patch once; returns whether @huggingface/jinja's strings now strip as Python's. */
export function ensurePythonStringMethods(): boolean {
	if (state !== 'unpatched') return state === 'patched';
	state = 'failed';
	const env = new Environment();
	const str = env.set('__probe_str', '') as unknown as RuntimeValueLike;
	const fn = env.set('__probe_fn', () => null) as unknown as RuntimeValueLike;
	const proto = Object.getPrototypeOf(str) as object;
	const desc = Object.getOwnPropertyDescriptor(proto, 'builtins');
	if (str.type !== 'StringValue' || fn.type !== 'FunctionValue' || !desc?.get) return false;
	const StringValue = str.constructor as StringValueCtor;
	const FunctionValue = fn.constructor as FunctionValueCtor;
	const originalGet = desc.get;
	const patchedMaps = new WeakSet<Map<string, unknown>>();
	const method = (self: RuntimeValueLike, mode: 'both' | 'left' | 'right') =>
		new FunctionValue((args) => {
			const a = args[0];
			if (
				a !== undefined &&
				a.type !== 'StringValue' &&
				a.type !== 'NullValue' &&
				a.type !== 'UndefinedValue'
			)
				throw new Error(`strip arg must be None or str, not ${a.type}`);
			const chars = a?.type === 'StringValue' ? (a.value as string) : null;
			return new StringValue(pyStrip(self.value as string, chars, mode));
		});
	Object.defineProperty(proto, 'builtins', {
		configurable: true,
		get(this: RuntimeValueLike) {
			const map = originalGet.call(this) as Map<string, unknown>;
			if (map instanceof Map && !patchedMaps.has(map)) {
				map.set('strip', method(this, 'both'));
				map.set('lstrip', method(this, 'left'));
				map.set('rstrip', method(this, 'right'));
				patchedMaps.add(map);
			}
			return map;
		}
	});
	state = 'patched';
	return true;
}
