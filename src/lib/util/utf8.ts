/**
 * @file Bytes as text where some are not UTF-8: a model sampling byte-level tokens can stop
 * between the bytes of one character (a reply cut by max_tokens, a partial emoji). A decoder
 * shows each such byte as U+FFFD, so two different replies read alike; here each valid run
 * decodes as text and each stray byte is written `\xNN`, so what the model said is visible.
 */

const strict = new TextDecoder('utf-8', { fatal: true });

/** The length of the UTF-8 sequence starting at `lead`, or 0 for a byte that cannot lead. */
function sequenceLength(lead: number): number {
	if (lead < 0x80) return 1;
	if (lead >= 0xc2 && lead <= 0xdf) return 2;
	if (lead >= 0xe0 && lead <= 0xef) return 3;
	if (lead >= 0xf0 && lead <= 0xf4) return 4;
	return 0;
}

export function escapeInvalidUtf8(bytes: ArrayLike<number>): string {
	const b = Uint8Array.from(bytes);
	let out = '';
	let i = 0;
	while (i < b.length) {
		const n = sequenceLength(b[i]);
		if (n > 0 && i + n <= b.length) {
			try {
				out += strict.decode(b.subarray(i, i + n));
				i += n;
				continue;
			} catch {
				// a lead byte without its continuation bytes: escaped below
			}
		}
		out += `\\x${b[i].toString(16).toUpperCase().padStart(2, '0')}`;
		i++;
	}
	return out;
}

/** `text` as the model wrote it: when it holds U+FFFD and the bytes are known, escaped. */
export function shownText(text: string, bytes: ArrayLike<number> | null | undefined): string {
	return text.includes('\uFFFD') && bytes ? escapeInvalidUtf8(bytes) : text;
}

const lenient = new TextDecoder();

/**
 * A reply's text with stray bytes escaped, from its sampled tokens' bytes: the shortest run
 * of tokens that decodes to `text` (an end token or a trimmed stop string after it is not
 * part of the text); `text` itself when it holds no U+FFFD or no run matches.
 */
export function shownReply(text: string, tokenBytes: readonly (readonly number[])[]): string {
	if (!text.includes('\uFFFD')) return text;
	const run: number[] = [];
	for (const b of tokenBytes) {
		run.push(...b);
		if (lenient.decode(Uint8Array.from(run)) === text) return escapeInvalidUtf8(run);
	}
	return text;
}
