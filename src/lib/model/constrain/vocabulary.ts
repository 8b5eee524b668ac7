/**
 * @file A tokenizer's vocabulary as byte strings, indexed for token masks: a byte trie in
 * preorder (a node's subtree is the range up to `end[node]`, so a rejected prefix skips its
 * tokens without recursion) and, per string sub-state, what each token does inside a JSON
 * string. Bytes come from GPT-2's byte-level table; a non-special added token is its UTF-8;
 * special tokens have no bytes and are never allowed, except as the caller's stop tokens.
 */
import { bytesToUnicode } from '../tokenizer/byte-level';
import { ConstraintError } from './errors';
import { STR_EXIT, STR_NEXT, STR_REJECT, STR_STARTS_CHAR, STRING_STATES } from './string-states';

/** What the vocabulary needs of a Tokenizer (src/lib/model/tokenizer/tokenizer.ts satisfies it). */
export interface VocabularySource {
	readonly vocabSize: number;
	idToToken(id: number): string | undefined;
	tokenToId(token: string): number | undefined;
	isSpecial(id: number): boolean;
	/** tokenizer_config.json: its `added_tokens_decoder` says which tokens are added. */
	readonly config?: Record<string, unknown>;
}

/** What tokens do inside a JSON string from one sub-state (see Vocabulary.string). */
export interface StringTable {
	/** Tokens that end the string (reach an unescaped quote): the caller runs them through
	 * the whole stack. */
	exits: Uint32Array;
	/** Code points started by each token that stays inside the string; -1: not allowed. */
	chars: Int16Array;
	/** Largest `chars`. */
	maxChars: number;
	/** r -> the tokens that stay inside with chars <= r (r <= maxChars), made on demand and
	 * kept for the STRING_MASKS most recently used r. */
	masks: Map<number, Uint32Array>;
}

/** Room values whose string masks a sub-state keeps (each Vocabulary.words * 4 bytes). */
const STRING_MASKS = 24;

export class Vocabulary {
	/** Token ids below this have bytes or not; the mask words cover them. */
	readonly size: number;
	/** u32 words of a mask: ceil(size / 32). */
	readonly words: number;
	/** All token bytes, concatenated; token id's bytes are flat[offsets[id]..offsets[id+1]). */
	readonly flat: Uint8Array;
	readonly offsets: Uint32Array;
	/** The trie, in preorder; node 0 is the root (no byte). */
	readonly trie: {
		nodes: number;
		byte: Uint8Array;
		depth: Uint16Array;
		/** One past the last node of the subtree. */
		end: Uint32Array;
		/** Tokens ending at node i: tokIds[tokStart[i]..tokStart[i+1]). */
		tokStart: Uint32Array;
		tokIds: Uint32Array;
		maxDepth: number;
	};
	readonly #strings: (StringTable | undefined)[] = new Array(STRING_STATES);

	/** `tokens[id]`: the bytes of token id, or null (never allowed). */
	constructor(tokens: readonly (Uint8Array | null)[]) {
		this.size = tokens.length;
		this.words = Math.ceil(this.size / 32);
		const offsets = new Uint32Array(this.size + 1);
		for (let id = 0; id < this.size; id++)
			offsets[id + 1] = offsets[id] + (tokens[id]?.length ?? 0);
		const flat = new Uint8Array(offsets[this.size]);
		for (let id = 0; id < this.size; id++) if (tokens[id]) flat.set(tokens[id]!, offsets[id]);
		this.flat = flat;
		this.offsets = offsets;
		this.trie = buildTrie(tokens);
	}

	/** Token id's bytes (empty: no bytes). */
	bytes(id: number): Uint8Array {
		return this.flat.subarray(this.offsets[id], this.offsets[id + 1]);
	}

	/** What each token does inside a string from sub-state `sub` (computed once). */
	string(sub: number): StringTable {
		let t = this.#strings[sub];
		if (t) return t;
		const chars = new Int16Array(this.size).fill(-1);
		const exits: number[] = [];
		let maxChars = 0;
		for (let id = 0; id < this.size; id++) {
			const from = this.offsets[id];
			const to = this.offsets[id + 1];
			if (from === to) continue;
			let s = sub;
			let c = 0;
			for (let i = from; i < to; i++) {
				const k = s * 256 + this.flat[i];
				c += STR_STARTS_CHAR[k];
				s = STR_NEXT[k];
				if (s < 0) break;
			}
			if (s === STR_EXIT) exits.push(id);
			else if (s !== STR_REJECT) {
				chars[id] = Math.min(c, 0x7fff);
				if (c > maxChars) maxChars = Math.min(c, 0x7fff);
			}
		}
		t = { exits: Uint32Array.from(exits), chars, maxChars, masks: new Map() };
		this.#strings[sub] = t;
		return t;
	}

	/** The tokens that stay inside a string from `sub` starting at most `room` code points. */
	stringMask(sub: number, room: number): Uint32Array {
		const t = this.string(sub);
		const r = Math.min(room, t.maxChars);
		let m = t.masks.get(r);
		if (m) t.masks.delete(r);
		else {
			m = new Uint32Array(this.words);
			for (let id = 0; id < this.size; id++) {
				const c = t.chars[id];
				if (c >= 0 && c <= r) m[id >>> 5] |= 1 << (id & 31);
			}
		}
		t.masks.set(r, m);
		if (t.masks.size > STRING_MASKS) t.masks.delete(t.masks.keys().next().value!);
		return m;
	}
}

const cache = new WeakMap<object, Vocabulary>();

/**
 * The vocabulary of a byte-level BPE tokenizer (cached per tokenizer object). Throws
 * ConstraintError when the tokenizer is not byte-level (no token for some byte).
 */
export function vocabularyOf(tokenizer: VocabularySource): Vocabulary {
	let v = cache.get(tokenizer);
	if (!v) {
		v = new Vocabulary(tokenBytes(tokenizer));
		cache.set(tokenizer, v);
	}
	return v;
}

/** Each token's bytes (null: special, unknown, or not byte-level). */
export function tokenBytes(tokenizer: VocabularySource): (Uint8Array | null)[] {
	const chars = bytesToUnicode();
	const byteOf = new Map(chars.map((c, b) => [c.charCodeAt(0), b]));
	const missing = chars.findIndex((c) => tokenizer.tokenToId(c) === undefined);
	if (missing >= 0)
		throw new ConstraintError(
			`the tokenizer is not byte-level BPE (no token for byte 0x${missing.toString(16)}, ` +
				`${JSON.stringify(chars[missing])}): constrained decoding needs a vocabulary that ` +
				'spells every byte (Qwen, Llama 3, GPT-2 style).'
		);
	const added = new Set<number>();
	const decoder = tokenizer.config?.added_tokens_decoder;
	if (decoder && typeof decoder === 'object')
		for (const id of Object.keys(decoder)) added.add(Number(id));
	const utf8 = new TextEncoder();
	const out: (Uint8Array | null)[] = new Array(tokenizer.vocabSize).fill(null);
	for (let id = 0; id < tokenizer.vocabSize; id++) {
		if (tokenizer.isSpecial(id)) continue;
		const token = tokenizer.idToToken(id);
		if (token === undefined || token === '') continue;
		if (added.has(id)) {
			out[id] = utf8.encode(token);
			continue;
		}
		const bytes = new Uint8Array(token.length);
		let ok = true;
		for (let i = 0; i < token.length; i++) {
			const b = byteOf.get(token.charCodeAt(i));
			if (b === undefined) {
				ok = false;
				break;
			}
			bytes[i] = b;
		}
		// Not in the byte alphabet: an added token the config did not list; its text is its bytes.
		out[id] = ok ? bytes : utf8.encode(token);
	}
	return out;
}

/** The preorder trie of the token byte strings (see Vocabulary.trie). */
function buildTrie(tokens: readonly (Uint8Array | null)[]): Vocabulary['trie'] {
	// Sort the tokens' byte strings (as Latin-1 strings: code unit order is byte order).
	const ids: number[] = [];
	const keys: string[] = [];
	for (let id = 0; id < tokens.length; id++) {
		const t = tokens[id];
		if (!t || t.length === 0) continue;
		ids.push(id);
		let s = '';
		for (let i = 0; i < t.length; i += 4096)
			s += String.fromCharCode(...t.subarray(i, Math.min(t.length, i + 4096)));
		keys[id] = s;
	}
	ids.sort((a, b) => (keys[a] < keys[b] ? -1 : keys[a] > keys[b] ? 1 : a - b));
	// Sorted keys list the trie in preorder: each key adds the nodes past its common
	// prefix with the previous one.
	const byte: number[] = [0];
	const depth: number[] = [0];
	const end: number[] = [0];
	const tokAt: number[][] = [];
	const path: number[] = [0]; // path[d]: the node at depth d on the current branch
	let prev = '';
	let maxDepth = 0;
	for (const id of ids) {
		const key = keys[id];
		let common = 0;
		const lim = Math.min(prev.length, key.length);
		while (common < lim && prev.charCodeAt(common) === key.charCodeAt(common)) common++;
		// Close the nodes of the previous branch below the common prefix.
		for (let d = path.length - 1; d > common; d--) end[path[d]] = byte.length;
		path.length = common + 1;
		for (let d = common; d < key.length; d++) {
			const node = byte.length;
			byte.push(key.charCodeAt(d));
			depth.push(d + 1);
			end.push(0);
			path.push(node);
		}
		const last = path[key.length];
		(tokAt[last] ??= []).push(id);
		maxDepth = Math.max(maxDepth, key.length);
		prev = key;
	}
	for (let d = path.length - 1; d >= 0; d--) end[path[d]] = byte.length;
	const nodes = byte.length;
	const tokStart = new Uint32Array(nodes + 1);
	for (let i = 0; i < nodes; i++) tokStart[i + 1] = tokStart[i] + (tokAt[i]?.length ?? 0);
	const tokIds = new Uint32Array(tokStart[nodes]);
	for (let i = 0; i < nodes; i++) if (tokAt[i]) tokIds.set(tokAt[i], tokStart[i]);
	return {
		nodes,
		byte: Uint8Array.from(byte),
		depth: Uint16Array.from(depth),
		end: Uint32Array.from(end),
		tokStart,
		tokIds,
		maxDepth
	};
}
