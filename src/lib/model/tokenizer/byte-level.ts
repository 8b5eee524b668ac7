/**
 * @file Byte-level BPE's byte -> character table (GPT-2's, as Qwen and Llama 3 use): each of
 * the 256 bytes is written as one printable character in a byte-level vocabulary. Used to
 * build byte-level vocabularies and to read a token's raw bytes back from its string.
 */

/** GPT-2's map from bytes to printable characters (printable Latin-1 maps to itself). */
export function bytesToUnicode(): string[] {
	const keep: number[] = [];
	for (let b = 0x21; b <= 0x7e; b++) keep.push(b);
	for (let b = 0xa1; b <= 0xac; b++) keep.push(b);
	for (let b = 0xae; b <= 0xff; b++) keep.push(b);
	const map: string[] = new Array(256);
	for (const b of keep) map[b] = String.fromCharCode(b);
	let n = 0;
	for (let b = 0; b < 256; b++) if (map[b] === undefined) map[b] = String.fromCharCode(256 + n++);
	return map;
}
