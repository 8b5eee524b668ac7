/**
 * @file The grammar of a constrained reply and its byte-level recogniser: JSON-shaped nodes
 * (literal sets, strings, numbers, objects, arrays, alternatives, sequences, repetitions,
 * references for recursion) and a pushdown recogniser that reads the reply one byte at a
 * time. json-schema.ts compiles a schema to these nodes; the OpenAI layer adds tool-call
 * wrappers; token-mask.ts turns a recogniser state into the set of tokens allowed next.
 *
 * Design. A state is a set of stacks; a stack is an immutable linked list of frames
 * (node, sub-state `s`, counter `n`, whitespace count `w`, parent), so stepping one byte
 * makes new top frames and shares the rest, and a trie walk over the vocabulary can branch
 * from a state without copying or undoing anything. Stepping is deterministic for JSON
 * except where a schema is not (anyOf, a literal that is a prefix of another, the end of a
 * repetition): there the step returns several stacks, each followed independently (a token
 * is allowed when any stack accepts it). A frame finishes eagerly on its last byte (`}`,
 * `]`, a string's closing quote) or lazily when the next byte is not its own (a number,
 * `1` of enum [1, 12]); the byte then goes to the parent. END (256), a pseudo-byte nothing
 * consumes, asks whether the text may end here.
 *
 * What it generates, deliberately narrower than JSON where that keeps a model from looping
 * or the output from failing a validator (every text it accepts is valid JSON of the
 * schema; the reverse does not hold):
 *  - whitespace: a gap between JSON tokens is nothing or one space (compact JSON: runs of
 *    whitespace cost a small model tokens and nothing else); with `maxIndent` >= 0 also one
 *    newline followed by at most that many spaces and tabs (16: pretty-printing with indent 4
 *    to depth 4, indent 2 to depth 8, as llama.cpp's JSON grammars bound it); no blank lines,
 *    no CR. None before the value or after it unless the caller asks: the reply is the JSON,
 *    then the end token;
 *  - no -0 (nor -0.0, -0e1): a zero is written 0;
 *  - object keys in the schema's order, optional ones skippable, no keys outside
 *    `properties` (unless the object has no properties: then any keys);
 *  - numbers: at most 15 integer digits, 15 fraction digits and 2 exponent digits (so every
 *    one parses to a finite double, an integer to a safe integer);
 *  - strings: valid UTF-8 (no overlong forms or surrogates), no raw control bytes, the
 *    standard escapes, `\u` escapes outside the surrogate range; min/maxLength count code
 *    points, an escape one;
 *  - free-form values (`{}` or `type: object` without properties) nest at most ANY_DEPTH.
 */

/** The pseudo-byte of the end of the text. */
export const END = 256;

/**
 * Default spaces and tabs after a gap's newline (see the file comment): -1, no newline at all
 * (compact JSON); 16 allows pretty-printing.
 */
export const DEFAULT_MAX_INDENT = -1;
export const PRETTY_MAX_INDENT = 16;
/** Digits per part of a number. */
export const MAX_INT_DIGITS = 15;
export const MAX_FRAC_DIGITS = 15;
export const MAX_EXP_DIGITS = 2;
/** Nesting of free-form values (json_object, `{}`) at most. */
export const ANY_DEPTH = 6;

/** A set of literal byte strings, as a trie: node 0 is the root. */
export interface LitTrie {
	next: Map<number, number>[];
	/** The literal's index ending at a node, or -1. */
	result: Int32Array;
	/** Whether a node has children (a literal ending there finishes lazily). */
	open: Uint8Array;
}

export interface LitsNode {
	kind: 'lits';
	id: number;
	trie: LitTrie;
	/** The literals as text (for messages and tests). */
	texts: string[];
}
export interface StrNode {
	kind: 'str';
	id: number;
	/** Code points at least / at most (Infinity: no bound). */
	min: number;
	max: number;
}
/** A number's bounds (integer bounds already rounded inward and inclusive). */
export interface NumBounds {
	min: number;
	minIncl: boolean;
	max: number;
	maxIncl: boolean;
}
export interface NumNode {
	kind: 'num';
	id: number;
	integer: boolean;
	/** minimum / maximum (exclusive or not); null: none. With bounds, no exponent. */
	bounds: NumBounds | null;
}
export interface ObjProp {
	name: string;
	value: GNode;
	required: boolean;
}
export interface ObjNode {
	kind: 'obj';
	id: number;
	props: ObjProp[];
	/** keys[j]: the keys that may come next when props j.. remain: props j up to and
	 * including the first required one (the literal's result is the prop's index). */
	keys: LitsNode[];
	/** requiredFrom[j]: some prop at index >= j is required. */
	requiredFrom: Uint8Array;
	/** Any keys (only when there are no props): the key and value nodes. */
	free: { key: GNode; value: GNode } | null;
}
export interface ArrNode {
	kind: 'arr';
	id: number;
	/** Item i for i < prefix.length (a tuple's positions: JSON Schema's prefixItems). */
	prefix: GNode[];
	/** Every later item; null when there are none (then max <= prefix.length). */
	items: GNode | null;
	min: number;
	max: number;
}
export interface AltNode {
	kind: 'alt';
	id: number;
	options: GNode[];
}
export interface SeqNode {
	kind: 'seq';
	id: number;
	parts: GNode[];
}
export interface RepNode {
	kind: 'rep';
	id: number;
	item: GNode;
	sep: GNode;
	min: number;
	max: number;
}
export interface RefNode {
	kind: 'ref';
	id: number;
	target: GNode | null;
}
export interface RootNode {
	kind: 'root';
	id: number;
	value: GNode;
	leadingWs: boolean;
	trailingWs: boolean;
}
export type GNode =
	| LitsNode
	| StrNode
	| NumNode
	| ObjNode
	| ArrNode
	| AltNode
	| SeqNode
	| RepNode
	| RefNode
	| RootNode;

let grammarIds = 0;

/** A compiled grammar: its root, and the gap bound its recogniser applies. */
export class Grammar {
	/** Distinct per grammar (mask caches key on it). */
	readonly uid = ++grammarIds;
	constructor(
		readonly root: RootNode,
		/** Spaces and tabs after a gap's newline at most. */
		readonly maxIndent: number
	) {}

	/** The recogniser's start: one stack, nothing read. */
	start(): Frame[] {
		return [new Frame(this.root, 0, 0, 0, null)];
	}

	/** Every stack that `bytes` leads to from `stacks` (none: not a prefix of the language). */
	advance(stacks: readonly Frame[], bytes: ArrayLike<number>): Frame[] {
		let cur = stacks as Frame[];
		for (let i = 0; i < bytes.length && cur.length; i++) cur = this.step(cur, bytes[i]);
		return cur;
	}

	/** The stacks after one byte (or END). */
	step(stacks: readonly Frame[], b: number): Frame[] {
		const out: Frame[] = [];
		for (const f of stacks) this.feed(f, b, out);
		return out;
	}

	/** Whether the text read so far is a whole sentence of the grammar. */
	acceptsEnd(stacks: readonly Frame[]): boolean {
		const out: Frame[] = [];
		for (const f of stacks) {
			this.feed(f, END, out);
			if (out.length) return true;
		}
		return false;
	}

	/** Whether `text` (UTF-8) is a whole sentence of the grammar. */
	accepts(text: string | Uint8Array): boolean {
		const bytes = typeof text === 'string' ? new TextEncoder().encode(text) : text;
		return this.acceptsEnd(this.advance(this.start(), bytes));
	}

	// ---- the recogniser ------------------------------------------------------------------

	/** Reads a whitespace byte of a gap (true: `b` is whitespace, read or refused). The
	 * frame's `w`: 0 nothing yet, 1 one space (the gap is over), 2 + k a newline and k
	 * spaces or tabs. */
	private gap(f: Frame, b: number, out: Frame[]): boolean {
		const w = f.w;
		let next = -1;
		if (b === 0x20) next = w === 0 ? 1 : w >= 2 && w - 2 < this.maxIndent ? w + 1 : -1;
		else if (b === 0x09) next = w >= 2 && w - 2 < this.maxIndent ? w + 1 : -1;
		else if (b === 0x0a) next = w === 0 && this.maxIndent >= 0 ? 2 : -1;
		else if (b !== 0x0d) return false;
		if (next >= 0) out.push(new Frame(f.node, f.s, f.n, next, f.up));
		return true;
	}

	/** Starts `node` as a child of `up` with its first byte `b`. */
	private enter(node: GNode, up: Frame, b: number, out: Frame[]): void {
		if (node.kind === 'alt') for (const o of node.options) this.enter(o, up, b, out);
		else if (node.kind === 'ref') this.enter(node.target!, up, b, out);
		else this.feed(new Frame(node, 0, 0, 0, up), b, out);
	}

	/** Frame `f` is complete with `result`; its parent continues, with byte `b` if b >= 0. */
	private finish(f: Frame, result: number, b: number, out: Frame[]): void {
		const p = f.up!;
		let next: Frame;
		switch (p.node.kind) {
			case 'root':
				next = new Frame(p.node, R_AFTER, 0, 0, p.up);
				break;
			case 'obj':
				next =
					p.s === O_IN_KEY
						? new Frame(p.node, O_AFTER_KEY, p.node.free ? 0 : result + 1, 0, p.up)
						: new Frame(p.node, O_AFTER_VALUE, p.n, 0, p.up);
				break;
			case 'arr':
				next = new Frame(p.node, A_AFTER_ITEM, p.n + 1, 0, p.up);
				break;
			case 'seq':
				if (p.s + 1 === p.node.parts.length) return this.finish(p, 0, b, out);
				next = new Frame(p.node, p.s + 1, 0, 0, p.up);
				break;
			case 'rep':
				next =
					p.s === P_ITEM
						? new Frame(p.node, P_AFTER_ITEM, p.n + 1, 0, p.up)
						: new Frame(p.node, P_ITEM, p.n, 0, p.up);
				break;
			default:
				throw new Error(`grammar: a ${p.node.kind} frame has no children`);
		}
		if (b < 0) out.push(next);
		else this.feed(next, b, out);
	}

	/** Every stack after frame `f` reads byte `b` (END: the end of the text). */
	private feed(f: Frame, b: number, out: Frame[]): void {
		const node = f.node;
		switch (node.kind) {
			case 'root':
				if (f.s === R_BEFORE) {
					if (node.leadingWs && this.gap(f, b, out)) return;
					if (b !== END) this.enter(node.value, new Frame(node, R_IN, 0, 0, f.up), b, out);
				} else if (f.s === R_AFTER) {
					if (b === END) out.push(f);
					else if (node.trailingWs) this.gap(f, b, out);
				}
				return;
			case 'lits': {
				const { trie } = node;
				const next = b < 256 ? trie.next[f.s].get(b) : undefined;
				if (next !== undefined) {
					if (trie.result[next] >= 0 && !trie.open[next])
						this.finish(f, trie.result[next], -1, out);
					else out.push(new Frame(node, next, 0, 0, f.up));
				}
				if (trie.result[f.s] >= 0 && trie.open[f.s]) this.finish(f, trie.result[f.s], b, out);
				return;
			}
			case 'str':
				return this.feedString(f, node, b, out);
			case 'num':
				return this.feedNumber(f, node, b, out);
			case 'obj':
				return this.feedObject(f, node, b, out);
			case 'arr':
				return this.feedArray(f, node, b, out);
			case 'seq':
				this.enter(node.parts[f.s], f, b, out);
				return;
			case 'rep':
				if (f.s === P_ITEM) this.enter(node.item, f, b, out);
				else if (f.s === P_AFTER_ITEM) {
					if (f.n < node.max) this.enter(node.sep, new Frame(node, P_SEP, f.n, 0, f.up), b, out);
					if (f.n >= node.min) this.finish(f, 0, b, out);
				}
				return;
			case 'alt':
			case 'ref':
				throw new Error(`grammar: ${node.kind} nodes have no frames`);
		}
	}

	private feedString(f: Frame, node: StrNode, b: number, out: Frame[]): void {
		if (f.s === S_OPEN) {
			if (b === 0x22) out.push(new Frame(node, S_BODY, 0, 0, f.up));
			return;
		}
		if (b >= 256) return;
		const t = STR_NEXT[f.s * 256 + b];
		if (t === STR_EXIT) {
			if (f.n >= node.min) this.finish(f, 0, -1, out);
			return;
		}
		if (t === STR_REJECT) return;
		let n = f.n;
		if (STR_STARTS_CHAR[f.s * 256 + b]) {
			if (n >= node.max) return;
			n++;
		}
		out.push(new Frame(node, t, n, 0, f.up));
	}

	private feedNumber(f: Frame, node: NumNode, b: number, out: Frame[]): void {
		const digit = b >= 0x30 && b <= 0x39;
		const bounds = node.bounds;
		if (
			bounds &&
			(b === 0x65 || b === 0x45) &&
			(f.s === N_ZERO || f.s === N_INT || f.s === N_FRAC)
		) {
			// No exponent with bounds: the number ends here or not at all.
			if (f.s === N_ZERO || f.s === N_INT || f.s === N_FRAC) this.finishNumber(f, bounds, b, out);
			return;
		}
		const push = (s: number, n: number): void => {
			// a "-" goes on only to a negative number (never -0): one the bounds must allow
			if (bounds && (s === N_MINUS || s === N_NEG_ZERO || s === N_NEG_ZERO_FRAC)) {
				const below = node.integer ? -1 : 0;
				if (!(bounds.min < below || (bounds.min === below && below < 0 && bounds.minIncl))) return;
			}
			if (!bounds) out.push(new Frame(node, s, n, 0, f.up));
			else {
				const t = f.t + String.fromCharCode(b);
				if (numberFeasible(t, bounds, node.integer)) out.push(new Frame(node, s, n, 0, f.up, t));
			}
		};
		switch (f.s) {
			case N_START:
				if (b === 0x2d) return push(N_MINUS, 0);
			// falls through: the first digit
			case N_MINUS:
				if (b === 0x30) {
					// "-0" is a number only as "-0.0…d" (d nonzero): not for an integer
					if (f.s === N_START) push(N_ZERO, 1);
					else if (!node.integer) push(N_NEG_ZERO, 1);
					return;
				}
				if (digit) return push(N_INT, 1);
				return;
			case N_NEG_ZERO:
				if (!node.integer && b === 0x2e) push(N_NEG_ZERO_FRAC, 0);
				return;
			case N_NEG_ZERO_FRAC:
				if (b === 0x30 && f.n < MAX_FRAC_DIGITS - 1) push(N_NEG_ZERO_FRAC, f.n + 1);
				else if (digit && b !== 0x30) push(N_FRAC, f.n + 1);
				return;
			case N_ZERO:
			case N_INT:
				if (f.s === N_INT && digit && f.n < MAX_INT_DIGITS) return push(N_INT, f.n + 1);
				if (!node.integer && b === 0x2e) return push(N_DOT, 0);
				if (!node.integer && (b === 0x65 || b === 0x45)) return push(N_E, 0);
				return this.finishNumber(f, bounds, b, out);
			case N_DOT:
				if (digit) push(N_FRAC, 1);
				return;
			case N_FRAC:
				if (digit && f.n < MAX_FRAC_DIGITS) return push(N_FRAC, f.n + 1);
				if (b === 0x65 || b === 0x45) return push(N_E, 0);
				return this.finishNumber(f, bounds, b, out);
			case N_E:
				if (b === 0x2b || b === 0x2d) return push(N_ESIGN, 0);
			// falls through: the first exponent digit
			case N_ESIGN:
				if (digit) push(N_EXP, 1);
				return;
			case N_EXP:
				if (digit && f.n < MAX_EXP_DIGITS) return push(N_EXP, f.n + 1);
				return this.finishNumber(f, bounds, b, out);
		}
	}

	/** A number ends (byte `b` goes to its parent): within its bounds, if it has any. */
	private finishNumber(f: Frame, bounds: NumBounds | null, b: number, out: Frame[]): void {
		if (bounds && !inBounds(Number(f.t), bounds)) return;
		this.finish(f, 0, b, out);
	}

	private feedObject(f: Frame, node: ObjNode, b: number, out: Frame[]): void {
		switch (f.s) {
			case O_OPEN:
				if (b === 0x7b) out.push(new Frame(node, O_AFTER_OPEN, 0, 0, f.up));
				return;
			case O_AFTER_OPEN:
			case O_AFTER_COMMA:
				if (this.gap(f, b, out)) return;
				if (b === 0x7d && f.s === O_AFTER_OPEN && (node.free || !node.requiredFrom[0]))
					return this.finish(f, 0, -1, out);
				if (b !== 0x22) return;
				if (node.free) this.enter(node.free.key, new Frame(node, O_IN_KEY, 0, 0, f.up), b, out);
				else if (f.n < node.props.length)
					this.enter(node.keys[f.n], new Frame(node, O_IN_KEY, f.n, 0, f.up), b, out);
				return;
			case O_AFTER_KEY:
				if (this.gap(f, b, out)) return;
				if (b === 0x3a) out.push(new Frame(node, O_AFTER_COLON, f.n, 0, f.up));
				return;
			case O_AFTER_COLON: {
				if (this.gap(f, b, out)) return;
				if (b === END) return;
				const value = node.free ? node.free.value : node.props[f.n - 1].value;
				this.enter(value, new Frame(node, O_IN_VALUE, f.n, 0, f.up), b, out);
				return;
			}
			case O_AFTER_VALUE:
				if (this.gap(f, b, out)) return;
				if (b === 0x2c && (node.free || f.n < node.props.length))
					out.push(new Frame(node, O_AFTER_COMMA, f.n, 0, f.up));
				else if (b === 0x7d && (node.free || !node.requiredFrom[f.n])) this.finish(f, 0, -1, out);
				return;
		}
	}

	private feedArray(f: Frame, node: ArrNode, b: number, out: Frame[]): void {
		switch (f.s) {
			case A_OPEN:
				if (b === 0x5b) out.push(new Frame(node, A_AFTER_OPEN, 0, 0, f.up));
				return;
			case A_AFTER_OPEN:
			case A_AFTER_COMMA:
				if (this.gap(f, b, out)) return;
				if (b === 0x5d && f.s === A_AFTER_OPEN && node.min === 0) return this.finish(f, 0, -1, out);
				if (b !== END && f.n < node.max)
					this.enter(
						f.n < node.prefix.length ? node.prefix[f.n] : node.items!, // (max bounds a null items)
						new Frame(node, A_IN_ITEM, f.n, 0, f.up),
						b,
						out
					);
				return;
			case A_AFTER_ITEM:
				if (this.gap(f, b, out)) return;
				if (b === 0x2c && f.n < node.max) out.push(new Frame(node, A_AFTER_COMMA, f.n, 0, f.up));
				else if (b === 0x5d && f.n >= node.min) this.finish(f, 0, -1, out);
				return;
		}
	}
}

/** One level of a recogniser stack (immutable; see the file comment). */
export class Frame {
	constructor(
		readonly node: GNode,
		/** Sub-state (per node kind, below). */
		readonly s: number,
		/** Counter: code points of a string, digits of a number part, items of an array,
		 * the next property of an object, repetitions. */
		readonly n: number,
		/** Where the current whitespace gap is (see Grammar.gap). */
		readonly w: number,
		readonly up: Frame | null,
		/** A bounded number's text so far (its feasibility is checked at every byte). */
		readonly t = ''
	) {}
}

/** A key for the future of a stack: two stacks with equal keys accept the same texts. */
export function stackKey(top: Frame): string {
	let key = '';
	for (let f: Frame | null = top; f; f = f.up) {
		const node = f.node;
		let n: string | number = f.n;
		if (node.kind === 'str')
			n = `${node.max === Infinity ? 'u' : node.max - f.n}:${Math.max(0, node.min - f.n)}`;
		else if (node.kind === 'arr' && f.n < node.prefix.length)
			n = `p${f.n}`; // a tuple's position
		else if (node.kind === 'arr' || node.kind === 'rep')
			n = `${node.max === Infinity ? 'u' : node.max - f.n}:${Math.max(0, node.min - f.n)}`;
		key += `${node.id}.${f.s}.${n}.${f.w}${f.t}/`;
	}
	return key;
}

// Sub-states. Root:
const R_BEFORE = 0;
const R_IN = 1;
const R_AFTER = 2;
// Object:
const O_OPEN = 0;
const O_AFTER_OPEN = 1;
const O_IN_KEY = 2;
const O_AFTER_KEY = 3;
const O_AFTER_COLON = 4;
const O_IN_VALUE = 5;
const O_AFTER_VALUE = 6;
const O_AFTER_COMMA = 7;
// Array:
const A_OPEN = 0;
const A_AFTER_OPEN = 1;
const A_IN_ITEM = 2;
const A_AFTER_ITEM = 3;
const A_AFTER_COMMA = 4;
// Repetition:
const P_ITEM = 0;
const P_AFTER_ITEM = 1;
const P_SEP = 2;
// Number:
const N_START = 0;
const N_MINUS = 1;
const N_ZERO = 2;
const N_INT = 3;
const N_DOT = 4;
const N_FRAC = 5;
const N_E = 6;
const N_ESIGN = 7;
const N_EXP = 8;
/** After "-0" and "-0." with only zeros since: -0 is no number to write, so a nonzero digit must come. */
const N_NEG_ZERO = 9;
const N_NEG_ZERO_FRAC = 10;

// String: S_OPEN expects the opening quote; the others are inside (S_BODY: between
// characters). A table over (sub-state, byte) drives the inside, so token-mask.ts can run
// a token's bytes through a string without the rest of the stack.
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

/** The nodes a node leads to: all of them (`all`), or only those entered without reading a
 * byte (alternatives, references, a sequence's first part, a repetition's item). */
function children(node: GNode, all: boolean): GNode[] {
	switch (node.kind) {
		case 'alt':
			return node.options;
		case 'ref':
			return node.target ? [node.target] : [];
		case 'seq':
			return all ? node.parts : node.parts.slice(0, 1);
		case 'rep':
			return all ? [node.item, node.sep] : [node.item];
		case 'root':
			return all ? [node.value] : [];
		case 'obj':
			if (!all) return [];
			return [
				...node.props.map((p) => p.value),
				...node.keys,
				...(node.free ? [node.free.key, node.free.value] : [])
			];
		case 'arr':
			return all ? [...node.prefix, ...(node.items ? [node.items] : [])] : [];
		default:
			return [];
	}
}

/**
 * The node that can reach itself without reading a byte (left recursion, e.g. a `$ref`
 * to itself through `anyOf`), which the recogniser would expand forever; null when none.
 */
export function emptyCycle(root: GNode): GNode | null {
	const nodes = new Set<GNode>([root]);
	for (const n of nodes) for (const c of children(n, true)) nodes.add(c);
	const state = new Map<GNode, 1 | 2>(); // 1: on the path, 2: done
	const visit = (n: GNode): GNode | null => {
		const s = state.get(n);
		if (s === 1) return n;
		if (s === 2) return null;
		state.set(n, 1);
		for (const c of children(n, false)) {
			const found = visit(c);
			if (found) return found;
		}
		state.set(n, 2);
		return null;
	};
	for (const n of nodes) {
		const found = visit(n);
		if (found) return found;
	}
	return null;
}

function inBounds(v: number, b: NumBounds): boolean {
	return (b.minIncl ? v >= b.min : v > b.min) && (b.maxIncl ? v <= b.max : v < b.max);
}

/**
 * Whether some number that `text` begins (no exponent, MAX_INT_DIGITS / MAX_FRAC_DIGITS
 * digits) lies within `b`. The completions of a prefix are a few intervals: one per count
 * of integer digits still to come, or, after the point, [text, text + 99..9]; each is
 * dense (any decimal of up to 15 fraction digits), so an interval that meets the bounds
 * holds a completion (bounds closer than 1e-15 apart aside). Integers: the bounds are
 * integers (rounded inward by the compiler) and the intervals hold every integer.
 */
export function numberFeasible(text: string, b: NumBounds, integer: boolean): boolean {
	const neg = text.startsWith('-');
	const body = neg ? text.slice(1) : text;
	const nines = (k: number) => '9'.repeat(k);
	const frac = integer ? '' : `.${nines(MAX_FRAC_DIGITS)}`;
	const spans: [number, number][] = [];
	const dot = body.indexOf('.');
	if (body === '') spans.push([0, Number(nines(MAX_INT_DIGITS) + frac)]);
	else if (dot >= 0) {
		const digits = body.length - dot - 1;
		spans.push([
			Number(body + (digits ? '' : '0')),
			Number(body + nines(MAX_FRAC_DIGITS - digits))
		]);
	} else if (body === '0') spans.push([0, Number(`0${frac}`)]);
	else
		for (let j = 0; body.length + j <= MAX_INT_DIGITS; j++)
			spans.push([Number(body + '0'.repeat(j)), Number(body + nines(j) + frac)]);
	return spans.some(([lo0, hi0]) => {
		const [lo, hi] = neg ? [-hi0, -lo0] : [lo0, hi0];
		const [L, Li] = lo > b.min ? [lo, true] : lo < b.min ? [b.min, b.minIncl] : [lo, b.minIncl];
		const [U, Ui] = hi < b.max ? [hi, true] : hi > b.max ? [b.max, b.maxIncl] : [hi, b.maxIncl];
		return L < U || (L === U && Li && Ui);
	});
}

/** Builds grammar nodes with distinct ids. */
export class GrammarBuilder {
	private nextId = 0;

	lits(texts: readonly string[]): LitsNode {
		const enc = new TextEncoder();
		const next: Map<number, number>[] = [new Map()];
		const result: number[] = [-1];
		texts.forEach((text, i) => {
			let at = 0;
			for (const b of enc.encode(text)) {
				let to = next[at].get(b);
				if (to === undefined) {
					to = next.length;
					next.push(new Map());
					result.push(-1);
					next[at].set(b, to);
				}
				at = to;
			}
			if (at === 0) throw new Error('grammar: an empty literal');
			if (result[at] < 0) result[at] = i;
		});
		const open = Uint8Array.from(next, (m) => (m.size > 0 ? 1 : 0));
		const trie = { next, result: Int32Array.from(result), open };
		return { kind: 'lits', id: this.nextId++, trie, texts: [...texts] };
	}

	str(min = 0, max = Infinity): StrNode {
		return { kind: 'str', id: this.nextId++, min, max };
	}

	num(integer: boolean, bounds: NumBounds | null = null): NumNode {
		return { kind: 'num', id: this.nextId++, integer, bounds };
	}

	obj(props: ObjProp[], free: { key: GNode; value: GNode } | null = null): ObjNode {
		if (props.length && free) throw new Error('grammar: an object has props or free keys');
		const requiredFrom = new Uint8Array(props.length + 1);
		for (let j = props.length - 1; j >= 0; j--)
			requiredFrom[j] = props[j].required || requiredFrom[j + 1] ? 1 : 0;
		const keys = props.map((_, j) => {
			const texts: string[] = [];
			for (let k = j; k < props.length; k++) {
				texts.push(JSON.stringify(props[k].name));
				if (props[k].required) break;
			}
			// Results are indices into texts; shift them to prop indices.
			const node = this.lits(texts);
			node.trie.result = node.trie.result.map((r) => (r < 0 ? r : r + j));
			return node;
		});
		return { kind: 'obj', id: this.nextId++, props, keys, requiredFrom, free };
	}

	arr(items: GNode | null, min = 0, max = Infinity, prefix: GNode[] = []): ArrNode {
		if (!items && max > prefix.length)
			throw new Error('grammar: an array with no items past its prefix must end there');
		return { kind: 'arr', id: this.nextId++, prefix, items, min, max };
	}

	alt(options: GNode[]): GNode {
		if (options.length === 1) return options[0];
		if (options.length === 0) throw new Error('grammar: an empty alternative');
		return { kind: 'alt', id: this.nextId++, options };
	}

	seq(parts: GNode[]): GNode {
		if (parts.length === 1) return parts[0];
		return { kind: 'seq', id: this.nextId++, parts };
	}

	rep(item: GNode, sep: GNode, min = 1, max = Infinity): RepNode {
		return { kind: 'rep', id: this.nextId++, item, sep, min, max };
	}

	ref(): RefNode {
		return { kind: 'ref', id: this.nextId++, target: null };
	}

	/** Any JSON value (free-form objects and arrays nest at most ANY_DEPTH). */
	any(depth = 0): GNode {
		const scalars: GNode[] = [this.str(), this.num(false), this.lits(['true', 'false', 'null'])];
		if (depth >= ANY_DEPTH) return this.alt(scalars);
		const inner = this.any(depth + 1);
		return this.alt([this.anyObject(inner), this.arr(inner), ...scalars]);
	}

	/** An object with any keys whose values are `value` (default: any JSON value). */
	anyObject(value: GNode = this.any(1)): ObjNode {
		return this.obj([], { key: this.str(), value });
	}

	build(
		value: GNode,
		options: { leadingWs?: boolean; trailingWs?: boolean; maxIndent?: number } = {}
	): Grammar {
		if (emptyCycle(value))
			throw new Error('grammar: a node reaches itself without reading a byte (left recursion)');
		const root: RootNode = {
			kind: 'root',
			id: this.nextId++,
			value,
			leadingWs: options.leadingWs ?? false,
			trailingWs: options.trailingWs ?? false
		};
		return new Grammar(root, options.maxIndent ?? DEFAULT_MAX_INDENT);
	}
}
