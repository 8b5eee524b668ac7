/**
 * Token masks over real vocabularies (model/constrain/vocabulary.ts, token-mask.ts): the
 * fixtures' tiny byte-level BPE and Qwen3's 151,669 tokens. The fast mask (trie walk /
 * string fast path, cached) must equal the plain reference (every token's bytes run
 * through the recogniser) in every state of several replies; random token walks (a random
 * allowed token each step) must end, at a stop token, in JSON that parses and validates;
 * the per-step cost on Qwen3 is measured and printed (the numbers quoted in token-mask.ts).
 */
import { describe, expect, it } from 'vitest';
import { ConstraintError } from '../../../../src/lib/model/constrain/errors';
import { jsonSchemaGrammar } from '../../../../src/lib/model/constrain/json-schema';
import { PRETTY_MAX_INDENT } from '../../../../src/lib/model/constrain/grammar-nodes';
import { TokenGrammar } from '../../../../src/lib/model/constrain/token-mask';
import {
	tokenBytes,
	vocabularyOf,
	type Vocabulary
} from '../../../../src/lib/model/constrain/vocabulary';
import { Tokenizer } from '../../../../src/lib/model/tokenizer/tokenizer';
import { tinyTokenizer } from '../../../../src/lib/testing/tiny-tokenizer';
import { Rng } from '../../../../src/lib/util/random';
import {
	KITCHEN_SCHEMA,
	RULER_PYDANTIC_SCHEMA,
	RULER_SCHEMA,
	schemaErrors
} from './json-schema-check';
import { qwen3Tokenizer } from '../../../helpers/qwen3-tokenizer';

function tiny(): Tokenizer {
	const t = tinyTokenizer();
	return Tokenizer.fromJson(t.tokenizerJson, t.tokenizerConfigJson);
}

const bits = (w: Uint32Array) => {
	const out: number[] = [];
	w.forEach((x, i) => {
		for (let j = 0; j < 32; j++) if ((x >>> j) & 1) out.push(32 * i + j);
	});
	return out;
};

/** A reply's token ids and the masks (fast and reference) before each of them. */
function compareAlong(tg: TokenGrammar, tokenizer: Tokenizer, text: string, stop: number[]) {
	const c = tg.start();
	const ids = [...tokenizer.encode(text), ...stop.slice(0, 1)];
	for (const id of ids) {
		const fast = new Uint32Array(tg.vocab.words);
		c.fillMask(fast, stop);
		const ref = tg.referenceMask(c.stacks);
		if (c.canEnd) for (const s of stop) ref[s >>> 5] |= 1 << (s & 31);
		expect(bits(fast), `after ${JSON.stringify(c.text)}`).toEqual(bits(ref));
		expect(bits(fast), `${id} allowed after ${JSON.stringify(c.text)}`).toContain(id);
		c.accept(id);
	}
	expect(c.done).toBe(true);
	expect(c.text).toBe(text);
}

/** Random allowed tokens until a stop token; half the picks among tokens with a closing
 * byte, so strings and arrays end. */
function randomReply(tg: TokenGrammar, vocab: Vocabulary, stop: number[], rng: Rng, limit = 600) {
	const c = tg.start();
	const closing = new Set([0x22, 0x7d, 0x5d]);
	for (let n = 0; n < limit && !c.done; n++) {
		const mask = new Uint32Array(vocab.words);
		c.fillMask(mask, stop);
		const allowed = bits(mask);
		expect(allowed.length, `stuck after ${JSON.stringify(c.text)}`).toBeGreaterThan(0);
		const ends = allowed.filter(
			(id) => stop.includes(id) || vocab.bytes(id).some((b) => closing.has(b))
		);
		const from = ends.length && rng.next() < 0.5 ? ends : allowed;
		c.accept(from[rng.int(from.length)]);
	}
	expect(c.done, `unfinished: ${JSON.stringify(c.text)}`).toBe(true);
	return c.text;
}

describe('token masks', () => {
	it('token bytes: byte-level tokens, added tokens as text, special tokens none', () => {
		const q = qwen3Tokenizer();
		const bytes = tokenBytes(q);
		const dec = (id: number) => new TextDecoder().decode(bytes[id]!);
		expect(dec(q.tokenToId('Ġhello')!)).toBe(' hello');
		expect(dec(q.tokenToId('<tool_call>')!)).toBe('<tool_call>');
		expect(bytes[q.tokenToId('<|im_end|>')!]).toBeNull();
		expect(Array.from(bytes[q.tokenToId('Ċ')!]!)).toEqual([0x0a]);
		expect(bytes).toHaveLength(q.vocabSize);
		// A vocabulary that cannot spell every byte is refused.
		const notByteLevel = {
			vocabSize: 3,
			idToToken: () => 'a',
			tokenToId: () => undefined,
			isSpecial: () => false
		};
		expect(() => tokenBytes(notByteLevel)).toThrow(ConstraintError);
	});

	it('tiny vocabulary: fast masks equal the reference along replies of several schemas', () => {
		const t = tiny();
		const vocab = vocabularyOf(t);
		const stop = [t.tokenToId('<|im_end|>')!];
		const cases: [unknown, string, number?][] = [
			[
				RULER_SCHEMA,
				'{"scores": [{"trajectory_id": "1", "explanation": "the dog won, très bien \\"ok\\"", "score": 0.75}]}'
			],
			[
				RULER_PYDANTIC_SCHEMA,
				'{\n  "scores": [\n    {\n      "trajectory_id": "2",\n      "explanation": "日本",\n      "score": -1e-3\n    }\n  ]\n}',
				PRETTY_MAX_INDENT // (pretty-printed: asked for)
			],
			[
				KITCHEN_SCHEMA,
				'{"name": "héllo", "mood": "très \\"fâché\\"", "age": 41, "score": 0.25, "ok": false, "tags": ["a", "bc"], "note": null, "extra": {"x": 1}}'
			]
		];
		for (const [schema, text, maxIndent] of cases)
			compareAlong(
				new TokenGrammar(jsonSchemaGrammar(schema, { maxIndent }), vocab),
				t,
				text,
				stop
			);
	});

	it('Qwen3 vocabulary: fast masks equal the reference along a RULER reply', () => {
		const q = qwen3Tokenizer();
		const vocab = vocabularyOf(q);
		const tg = new TokenGrammar(jsonSchemaGrammar(RULER_PYDANTIC_SCHEMA), vocab);
		compareAlong(
			tg,
			q,
			'{"scores": [{"trajectory_id": "1", "explanation": "Won in 5 moves; très bien, 日本語 \\n ok.", "score": 0.9}]}',
			q.eosTokenIds
		);
	});

	it('random token walks end in valid JSON (tiny and Qwen3 vocabularies)', () => {
		const rng = new Rng(3);
		for (const tokenizer of [tiny(), qwen3Tokenizer()]) {
			const vocab = vocabularyOf(tokenizer);
			const stop = tokenizer.eosTokenIds;
			for (const schema of [KITCHEN_SCHEMA, { ...RULER_SCHEMA }]) {
				const tg = new TokenGrammar(jsonSchemaGrammar(schema), vocab);
				for (let k = 0; k < 6; k++) {
					const text = randomReply(tg, vocab, stop, rng);
					expect(schemaErrors(schema, JSON.parse(text)), text).toEqual([]);
				}
			}
		}
	});

	it('Qwen3: per-step mask cost (printed), and the cache serves repeated states', () => {
		const q = qwen3Tokenizer();
		let t0 = performance.now();
		const vocab = vocabularyOf(q); // built by an earlier test in this file: cached
		const build = performance.now() - t0;
		const text =
			'{"scores": [{"trajectory_id": "1", "explanation": "The agent won the game quickly, très bien 日本", "score": 0.75}, ' +
			'{"trajectory_id": "2", "explanation": "It lost: an illegal move at turn 3.", "score": 0}]}';
		const ids = [...q.encode(text), q.eosTokenIds[0]];
		const perStep = (tg: TokenGrammar) => {
			const c = tg.start();
			const times: number[] = [];
			for (const id of ids) {
				const mask = new Uint32Array(Math.ceil(151936 / 32));
				t0 = performance.now();
				c.fillMask(mask, q.eosTokenIds);
				times.push(performance.now() - t0);
				c.accept(id);
			}
			return times.sort((a, b) => a - b);
		};
		const grammar = jsonSchemaGrammar(RULER_SCHEMA);
		perStep(new TokenGrammar(grammar, vocab, 0)); // warm the JIT and the string tables
		const uncached = perStep(new TokenGrammar(grammar, vocab, 0)); // every mask computed
		const tg = new TokenGrammar(grammar, vocab);
		const first = perStep(tg); // states repeat within a reply (an unbounded string's, the second item's)
		const again = perStep(tg); // a second reply: every state cached
		const ms = (x: number) => `${x.toFixed(3)} ms`;
		const summary = (t: number[]) =>
			`median ${ms(t[t.length >> 1])}, p90 ${ms(t[Math.floor(t.length * 0.9)])}, max ${ms(t.at(-1)!)}`;
		console.log(
			`Qwen3 (${vocab.size} tokens, ${vocab.trie.nodes} trie nodes) mask per step over the ` +
				`${ids.length} tokens of a RULER reply: no cache ${summary(uncached)}; first reply ` +
				`${summary(first)}; second reply (cached) ${summary(again)}; vocabulary lookup ${ms(build)}`
		);
		expect(tg.stats.cached).toBeGreaterThan(ids.length); // the second reply: all cached
		// Loose bounds (a shared 2-core machine): well under a decode step.
		expect(uncached[uncached.length >> 1]).toBeLessThan(10);
		expect(again[again.length >> 1]).toBeLessThan(1);
	});
});
