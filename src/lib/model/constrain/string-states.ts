/**
 * @file The sub-states of a JSON string and a table over (sub-state, byte) that drives its
 * inside: valid UTF-8 (no overlong forms or surrogates), no raw control bytes, the standard
 * escapes. The recogniser (grammar.ts) runs it, and so can token-mask.ts and vocabulary.ts
 * with a token's bytes, without the rest of the stack.
 */

// S_OPEN expects the opening quote; the others are inside (S_BODY: between characters).
export const S_OPEN = 0;
export const S_BODY = 1;
const S_ESC = 2; // after a backslash
const S_U0 = 3; // \u, no hex digit yet
const S_U1 = 4; // \uX (X not d/D)
const S_U1D = 5; // \ud: the next digit 0-7 (d800-dfff are surrogates)
const S_U2 = 6;
const S_U3 = 7;
const S_C1 = 8; // one UTF-8 continuation byte to go
const S_C2 = 9;
const S_C3 = 10;
const S_E0 = 11; // after E0: A0-BF, then one more
const S_ED = 12; // after ED: 80-9F (no surrogates), then one more
const S_F0 = 13; // after F0: 90-BF, then two more
const S_F4 = 14; // after F4: 80-8F (<= U+10FFFF), then two more
export const STRING_STATES = 15;
/** STR_NEXT entries that are not sub-states. */
export const STR_REJECT = -1;
export const STR_EXIT = -2;

/** Next sub-state inside a string by (sub-state * 256 + byte). */
export const STR_NEXT = new Int8Array(STRING_STATES * 256).fill(STR_REJECT);
/** 1 where the byte starts a code point (counted against maxLength). */
export const STR_STARTS_CHAR = new Uint8Array(STRING_STATES * 256);
{
	const set = (s: number, lo: number, hi: number, t: number, starts = 0) => {
		for (let b = lo; b <= hi; b++) {
			STR_NEXT[s * 256 + b] = t;
			STR_STARTS_CHAR[s * 256 + b] = starts;
		}
	};
	// Between characters: printable ASCII, the quote ends the string, a backslash escapes.
	set(S_BODY, 0x20, 0x7f, S_BODY, 1);
	set(S_BODY, 0x22, 0x22, STR_EXIT);
	set(S_BODY, 0x5c, 0x5c, S_ESC, 1);
	set(S_BODY, 0xc2, 0xdf, S_C1, 1);
	set(S_BODY, 0xe0, 0xe0, S_E0, 1);
	set(S_BODY, 0xe1, 0xec, S_C2, 1);
	set(S_BODY, 0xed, 0xed, S_ED, 1);
	set(S_BODY, 0xee, 0xef, S_C2, 1);
	set(S_BODY, 0xf0, 0xf0, S_F0, 1);
	set(S_BODY, 0xf1, 0xf3, S_C3, 1);
	set(S_BODY, 0xf4, 0xf4, S_F4, 1);
	for (const c of '"\\/bfnrt') set(S_ESC, c.charCodeAt(0), c.charCodeAt(0), S_BODY);
	set(S_ESC, 0x75, 0x75, S_U0);
	const hex = (s: number, t: number) => {
		set(s, 0x30, 0x39, t);
		set(s, 0x41, 0x46, t);
		set(s, 0x61, 0x66, t);
	};
	hex(S_U0, S_U1);
	set(S_U0, 0x44, 0x44, S_U1D);
	set(S_U0, 0x64, 0x64, S_U1D);
	hex(S_U1, S_U2);
	set(S_U1D, 0x30, 0x37, S_U2);
	hex(S_U2, S_U3);
	hex(S_U3, S_BODY);
	set(S_C1, 0x80, 0xbf, S_BODY);
	set(S_C2, 0x80, 0xbf, S_C1);
	set(S_C3, 0x80, 0xbf, S_C2);
	set(S_E0, 0xa0, 0xbf, S_C1);
	set(S_ED, 0x80, 0x9f, S_C1);
	set(S_F0, 0x90, 0xbf, S_C2);
	set(S_F4, 0x80, 0x8f, S_C2);
}
