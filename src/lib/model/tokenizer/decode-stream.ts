/**
 * @file Incremental detokenization: a BPE token may end inside a UTF-8 character (decoded
 * alone: U+FFFD), so, as the Rust tokenizers' DecodeStream, a window of ids is decoded with
 * and without the new tokens and the difference emitted only when it does not end in
 * U+FFFD. The pieces concatenate to `decode(allIds)`; `flush()` gives what is held back.
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
