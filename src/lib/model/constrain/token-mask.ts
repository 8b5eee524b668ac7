/**
 * @file Token masks: which tokens may come next in a grammar's state, and the per-sequence
 * TokenConstraint the Generator asks for them. A stack's mask is cached by its key (equal
 * keys, equal futures). Inside a JSON string it is a precomputed table plus the few tokens
 * that close the string; elsewhere a preorder walk of the vocabulary's byte trie that skips
 * every rejected subtree. Several stacks (anyOf) allow the union. A step costs well under a
 * decode step (constrain-mask.test.ts prints it).
 */
import type { TokenConstraint } from '../generate/options';
import { ConstraintError } from './errors';
import { Frame, Grammar, stackKey } from './grammar';
import { S_OPEN } from './string-states';
import type { Vocabulary } from './vocabulary';

/** The mask of one stack: allowed token bits (Vocabulary.words u32), and whether the text
 * may end here (the caller's stop tokens are then allowed too). */
export interface StackMask {
	words: Uint32Array;
	end: boolean;
}

/** Stacks a state keeps at most; more (a very ambiguous anyOf) are dropped, which only
 * narrows what may be generated: every stack kept still leads to valid text. */
const MAX_STACKS = 32;
/** Masks cached per TokenGrammar (each Vocabulary.words * 4 bytes: 19 KB for Qwen, so
 * 1.2 MB at most); a schema's reply meets a few dozen distinct states. */
const DEFAULT_CACHE = 64;

/** A grammar over a vocabulary: computes and caches token masks; `start()` makes a
 * constraint for one sequence. */
export class TokenGrammar {
	readonly #cache = new Map<string, StackMask>();
	/** Masks computed (cache misses) and served from the cache, for tests and benchmarks. */
	readonly stats = { computed: 0, cached: 0 };

	constructor(
		readonly grammar: Grammar,
		readonly vocab: Vocabulary,
		readonly cacheSize = DEFAULT_CACHE
	) {}

	start(): GrammarConstraint {
		return new GrammarConstraint(this);
	}

	/** The mask of one recogniser stack (cached; do not modify it). */
	stackMask(top: Frame): StackMask {
		const key = stackKey(top);
		const hit = this.#cache.get(key);
		if (hit) {
			this.#cache.delete(key); // least recently used goes first
			this.#cache.set(key, hit);
			this.stats.cached++;
			return hit;
		}
		this.stats.computed++;
		const node = top.node;
		let words: Uint32Array;
		if (node.kind === 'str' && top.s !== S_OPEN) {
			const { vocab, grammar } = this;
			words = vocab.stringMask(top.s, node.max - top.n).slice();
			for (const id of vocab.string(top.s).exits)
				if (grammar.advance([top], vocab.bytes(id)).length) words[id >>> 5] |= 1 << (id & 31);
		} else words = this.walk(top);
		const mask = { words, end: this.grammar.acceptsEnd([top]) };
		this.#cache.set(key, mask);
		if (this.#cache.size > this.cacheSize) this.#cache.delete(this.#cache.keys().next().value!);
		return mask;
	}

	/** The tokens whose bytes the stack accepts, by a preorder walk of the trie. */
	private walk(top: Frame): Uint32Array {
		const { byte, depth, end, tokStart, tokIds, nodes, maxDepth } = this.vocab.trie;
		const words = new Uint32Array(this.vocab.words);
		const states: Frame[][] = new Array(maxDepth + 1);
		states[0] = [top];
		for (let i = 1; i < nodes;) {
			const next = this.grammar.step(states[depth[i] - 1], byte[i]);
			if (next.length === 0) {
				i = end[i];
				continue;
			}
			states[depth[i]] = next;
			for (let k = tokStart[i]; k < tokStart[i + 1]; k++) {
				const id = tokIds[k];
				words[id >>> 5] |= 1 << (id & 31);
			}
			i++;
		}
		return words;
	}

	/** Tokens allowed after `stacks` as a plain CPU reference: every token's bytes run
	 * through the recogniser (slow; tests compare the fast mask with it). */
	referenceMask(stacks: readonly Frame[]): Uint32Array {
		const words = new Uint32Array(this.vocab.words);
		for (let id = 0; id < this.vocab.size; id++) {
			const bytes = this.vocab.bytes(id);
			if (bytes.length && this.grammar.advance(stacks, bytes).length)
				words[id >>> 5] |= 1 << (id & 31);
		}
		return words;
	}
}

/** One sequence's place in a grammar (the Generator's TokenConstraint). */
export class GrammarConstraint implements TokenConstraint {
	#stacks: Frame[];
	#done = false;
	/** The stop tokens of the last fillMask, and whether they were allowed. */
	#stop: readonly number[] = [];
	#end = false;
	/** The bytes accepted so far (the reply's text, for messages and tests). */
	readonly #bytes: number[] = [];

	constructor(readonly tokens: TokenGrammar) {
		this.#stacks = tokens.grammar.start();
	}

	/** The grammar is finished (a stop token was accepted where the text may end). */
	get done(): boolean {
		return this.#done;
	}

	/** The recogniser's stacks now (tests). */
	get stacks(): readonly Frame[] {
		return this.#stacks;
	}

	/** Whether the text so far may end here. */
	get canEnd(): boolean {
		return this.tokens.grammar.acceptsEnd(this.#stacks);
	}

	fillMask(mask: Uint32Array, stop: readonly number[]): void {
		this.#stop = stop;
		this.#end = false;
		if (this.#done) return;
		for (const top of this.#stacks) {
			const m = this.tokens.stackMask(top);
			const w = m.words;
			for (let i = 0; i < w.length; i++) mask[i] |= w[i];
			if (m.end) this.#end = true;
		}
		if (this.#end)
			for (const id of stop) if (id >>> 5 < mask.length) mask[id >>> 5] |= 1 << (id & 31);
	}

	accept(id: number): void {
		if (this.#done) throw new ConstraintError(`token ${id} came after the grammar finished`);
		if (this.#end && this.#stop.includes(id)) {
			this.#done = true;
			return;
		}
		const { vocab, grammar } = this.tokens;
		const bytes = id < vocab.size ? vocab.bytes(id) : new Uint8Array(0);
		const next = bytes.length ? grammar.advance(this.#stacks, bytes) : [];
		if (next.length === 0)
			throw new ConstraintError(
				`token ${id} (${JSON.stringify(new TextDecoder().decode(bytes))}) is not allowed ` +
					`after ${JSON.stringify(new TextDecoder().decode(Uint8Array.from(this.#bytes)))}`
			);
		this.#bytes.push(...bytes);
		const seen = new Set<string>();
		this.#stacks = [];
		for (const top of next) {
			const key = stackKey(top);
			if (seen.has(key)) continue;
			seen.add(key);
			this.#stacks.push(top);
			if (this.#stacks.length === MAX_STACKS) break;
		}
	}

	/** The UTF-8 text accepted so far. */
	get text(): string {
		return new TextDecoder().decode(Uint8Array.from(this.#bytes));
	}
}
