/** Bytes shown as text with the stray ones escaped (util/utf8.ts), against hand-made cases. */
import { describe, expect, it } from 'vitest';
import { escapeInvalidUtf8, shownReply, shownText } from '../../../src/lib/util/utf8';

const bytes = (s: string) => [...new TextEncoder().encode(s)];

describe('escapeInvalidUtf8', () => {
	it('decodes valid text as it is, any script', () => {
		expect(escapeInvalidUtf8(bytes('abc é 中 🎲'))).toBe('abc é 中 🎲');
	});

	it('writes a character cut short, a stray continuation and a bad lead as \\xNN each', () => {
		const dice = bytes('🎲'); // F0 9F 8E B2
		expect(escapeInvalidUtf8([...bytes('ab'), ...dice.slice(0, 2)])).toBe('ab\\xF0\\x9F');
		expect(escapeInvalidUtf8([0x8e, ...bytes('x')])).toBe('\\x8Ex');
		expect(escapeInvalidUtf8([0xc0, 0x80, 0xff])).toBe('\\xC0\\x80\\xFF');
		// a lead whose next byte does not continue it: the lead escaped, the rest decoded
		expect(escapeInvalidUtf8([0xe4, ...bytes('ok')])).toBe('\\xE4ok');
	});

	it('leaves text without U+FFFD alone, and needs the bytes to escape', () => {
		expect(shownText('plain', [0xff])).toBe('plain');
		expect(shownText('a\uFFFD', null)).toBe('a\uFFFD');
		expect(shownText('a\uFFFD', [0x61, 0xe4, 0xb8])).toBe('a\\xE4\\xB8');
	});
});

describe('shownReply', () => {
	it("escapes the reply's stray bytes from its tokens', leaving out an end token after the text", () => {
		const tokens = [bytes('ab'), [0xe4, 0xb8], bytes('<|im_end|>')];
		const text = new TextDecoder().decode(Uint8Array.from([...bytes('ab'), 0xe4, 0xb8]));
		expect(text).toBe('ab\uFFFD');
		expect(shownReply(text, tokens)).toBe('ab\\xE4\\xB8');
		expect(shownReply('abc', tokens)).toBe('abc');
		// tokens that never make the text: the text as it is
		expect(shownReply(text, [bytes('zz')])).toBe(text);
	});
});
