/**
 * @file Incremental detokenization for generation: tokens go in one at a time, text comes out
 * only once it is whole. A byte-level BPE token can end in the middle of a UTF-8 character
 * (an emoji or a CJK character is often 2-4 tokens); decoding it alone yields U+FFFD. The
 * design follows the Rust tokenizers' DecodeStream: keep a window of ids from `prefix`
 * (already emitted, kept for context, e.g. a leading space that a decoder strips from the
 * first token) to the end; decode the window with and without the new tokens; emit the
 * difference only when the longer text does not end in U+FFFD, then slide the window.
 * So the pieces concatenate to exactly `decode(allIds)` whenever that has no U+FFFD at the
 * end, and a piece never ends inside a character; `flush()` gives what is held back at the
 * end of generation (a true U+FFFD, or an incomplete sequence the model left).
 */

/** What the stream needs of a tokenizer: decode a list of ids to text. */
export type DecodeFn = (ids: number[]) => string;

const REPLACEMENT = '\uFFFD';

export class DecodeStream {
	private readonly ids: number[] = [];
	/** Start of the context window (ids before it are done with). */
	private prefix = 0;
	/** End of what has been emitted. */
	private read = 0;
	private emitted = '';

	constructor(private readonly decode: DecodeFn) {}

	/** Adds generated id(s); returns the new whole text (possibly ''). */
	push(idOrIds: number | number[]): string {
		if (typeof idOrIds === 'number') this.ids.push(idOrIds);
		else this.ids.push(...idOrIds);
		const before = this.decode(this.ids.slice(this.prefix, this.read));
		const after = this.decode(this.ids.slice(this.prefix));
		if (after.length > before.length && !after.endsWith(REPLACEMENT)) {
			const piece = after.slice(before.length);
			this.prefix = this.read;
			this.read = this.ids.length;
			this.emitted += piece;
			return piece;
		}
		return '';
	}

	/** Emits whatever is held back (call once generation has stopped). */
	flush(): string {
		if (this.read === this.ids.length) return '';
		const before = this.decode(this.ids.slice(this.prefix, this.read));
		const after = this.decode(this.ids.slice(this.prefix));
		const piece = after.slice(before.length);
		this.prefix = this.read;
		this.read = this.ids.length;
		this.emitted += piece;
		return piece;
	}

	/** All text emitted so far. */
	get text(): string {
		return this.emitted;
	}

	/** All ids pushed so far. */
	get tokenIds(): readonly number[] {
		return this.ids;
	}
}
