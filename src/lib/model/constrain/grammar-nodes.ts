/**
 * @file The nodes of a constrained reply's grammar (literal sets, strings, numbers,
 * objects, arrays, alternatives, sequences, repetitions, references) and the bounds of
 * their language, narrower than JSON so a small model cannot loop and every accepted text
 * is valid JSON of the schema: a gap is nothing or one space (or, with `maxIndent`, a
 * newline and at most that many spaces and tabs); no -0; keys in the schema's order;
 * numbers of at most 15 + 15 + 2 digits (finite doubles, safe integers); valid UTF-8
 * strings; free-form values nest at most ANY_DEPTH.
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
