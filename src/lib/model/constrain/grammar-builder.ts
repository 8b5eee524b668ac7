/**
 * @file Builds grammar nodes with distinct ids (GrammarBuilder) and a Grammar from them,
 * refusing a grammar whose recogniser would expand forever (emptyCycle: left recursion).
 */
import { Grammar } from './grammar';
import {
	ANY_DEPTH,
	DEFAULT_MAX_INDENT,
	type ArrNode,
	type GNode,
	type LitsNode,
	type NumBounds,
	type NumNode,
	type ObjNode,
	type ObjProp,
	type RefNode,
	type RepNode,
	type RootNode,
	type StrNode
} from './grammar-nodes';

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
