// Over 400 lines: one job, the recogniser (one class whose step and its state sharing belong together).
/**
 * @file The byte-level recogniser of a grammar (grammar-nodes.ts), a pushdown automaton;
 * token-mask.ts turns its state into the tokens allowed next. A state is a set of stacks of
 * immutable frames (node, sub-state s, counter n, whitespace w, parent) sharing their tails,
 * so a vocabulary trie walk branches without copying; a step yields several stacks where a
 * schema is not deterministic (anyOf, a literal prefix of another, a repetition's end). A
 * frame ends on its last byte, or when the next byte is not its own (it goes to the parent).
 * END (256), a pseudo-byte nothing consumes, asks whether the text may end here.
 */
import {
	END,
	MAX_EXP_DIGITS,
	MAX_FRAC_DIGITS,
	MAX_INT_DIGITS,
	type ArrNode,
	type GNode,
	type NumBounds,
	type NumNode,
	type ObjNode,
	type RootNode,
	type StrNode
} from './grammar-nodes';
import { inBounds, numberFeasible } from './number-bounds';
import { S_BODY, S_OPEN, STR_EXIT, STR_NEXT, STR_REJECT, STR_STARTS_CHAR } from './string-states';

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
