/**
 * @file Turn-by-turn tokenizing re-tokenizes the whole chat each turn (O(turns^2)). The
 * tokenizers pipeline encodes the text between added tokens piece by piece, so a text cut
 * at the template's special tokens is encoded piece by piece with an LRU cache of the ids.
 * Exact (tokenizer.test.ts compares): cuts are found as the library finds added tokens,
 * only at tokens that strip nothing; `forTokenizer` is null for a pre-tokenizer that treats
 * a text's first piece differently (Metaspace "first").
 */

/** An added token of tokenizer.json, as far as cutting at it goes. */
export interface AddedTokenSpec {
	id: number;
	content: string;
	lstrip?: boolean;
	rstrip?: boolean;
	normalized?: boolean;
}

interface TrieNode {
	next: Map<string, TrieNode>;
	/** The token ending here, and whether a cut may be made at it. */
	token?: { content: string; id: number; cut: boolean };
}

/** Pieces longer than this are tokenized directly, not cached (long documents repeat rarely). */
export const MAX_PIECE_CHARS = 4096;
/** The cache's size bound, in characters of its pieces (~8 MB of strings, plus their ids). */
const CAPACITY_CHARS = 1 << 22;

/** True when `node` (a tokenizer.json pre_tokenizer, possibly a Sequence) has a Metaspace
 * whose prefix depends on the piece's position in the text. */
function positionDependent(node: unknown): boolean {
	if (!node || typeof node !== 'object') return false;
	const n = node as { type?: unknown; prepend_scheme?: unknown; pretokenizers?: unknown };
	if (n.type === 'Metaspace' && n.prepend_scheme === 'first') return true;
	return Array.isArray(n.pretokenizers) && n.pretokenizers.some(positionDependent);
}

export class PieceCache {
	private readonly root: TrieNode = { next: new Map() };
	private readonly cache = new Map<string, number[]>();
	private cachedChars = 0;

	private constructor(tokens: readonly AddedTokenSpec[], hasNormalizer: boolean) {
		for (const t of tokens) {
			// Tokens matched after normalization are found inside pieces by the pipeline itself.
			if (t.normalized && hasNormalizer) continue;
			let node = this.root;
			// By UTF-16 code unit, as the pipeline's splitter walks its trie.
			for (let k = 0; k < t.content.length; k++) {
				let child = node.next.get(t.content[k]);
				if (!child) node.next.set(t.content[k], (child = { next: new Map() }));
				node = child;
			}
			const cut = !t.lstrip && !t.rstrip && t.content === t.content.trim() && t.content !== '';
			node.token = { content: t.content, id: t.id, cut };
		}
	}

	/** A cache for this tokenizer.json, or null where cutting would change the ids. */
	static forTokenizer(
		tokenizerJson: Record<string, unknown>,
		tokens: readonly AddedTokenSpec[]
	): PieceCache | null {
		if (positionDependent(tokenizerJson.pre_tokenizer)) return null;
		const cache = new PieceCache(tokens, tokenizerJson.normalizer != null);
		return cache.root.next.size ? cache : null;
	}

	/**
	 * `text` cut at the cut tokens, in order: a cut token's id, or the (non-empty) piece of
	 * text between two cuts. The pieces' ids (`piece`) and the tokens' ids, concatenated, are
	 * the pipeline's ids of `text` (Tokenizer.encode); a caller may stop early (a prompt
	 * already past the context), yield to the event loop between parts, or encode a long
	 * piece elsewhere (another thread: tokenizer-thread.ts).
	 */
	*parts(text: string): Generator<number | string> {
		let start = 0;
		let i = 0;
		while (i < text.length) {
			// The longest added token starting at i, as the pipeline's splitter finds it.
			let node: TrieNode | undefined = this.root;
			let match: TrieNode['token'];
			for (let j = i; j < text.length; j++) {
				node = node.next.get(text[j]);
				if (!node) break;
				if (node.token) match = node.token;
			}
			if (!match) {
				i++;
				continue;
			}
			if (match.cut) {
				if (i > start) yield text.slice(start, i);
				yield match.id;
				start = i + match.content.length;
			}
			// A token that is not a cut stays inside its piece; the pipeline scans past it too.
			i += match.content.length;
		}
		if (text.length > start) yield text.slice(start);
	}

	/** The ids of one piece of `parts`: from the cache, else `encodePiece` (then cached if short). */
	piece(piece: string, encodePiece: (piece: string) => number[]): number[] {
		if (piece.length > MAX_PIECE_CHARS) return encodePiece(piece);
		const hit = this.cache.get(piece);
		if (hit) {
			// Most recently used last: Map keeps insertion order.
			this.cache.delete(piece);
			this.cache.set(piece, hit);
			return hit;
		}
		const ids = encodePiece(piece);
		this.cache.set(piece, ids);
		this.cachedChars += piece.length;
		// Least recently used first out.
		for (const old of this.cache.keys()) {
			if (this.cachedChars <= CAPACITY_CHARS) break;
			this.cache.delete(old);
			this.cachedChars -= old.length;
		}
		return ids;
	}
}
