/**
 * The piece cache behind Tokenizer.encode (src/lib/model/tokenizer/piece-cache.ts): ids equal to the
 * uncached @huggingface/tokenizers pipeline on the real Qwen3 tokenizer.json, also where
 * added tokens strip their neighbours' whitespace; only new pieces are tokenized; refused
 * for position-dependent pre-tokenizers. (chat-template.test.ts also checks encodeChat,
 * which goes through the cache, against transformers' ids.)
 */
import { Tokenizer as HfTokenizer } from '@huggingface/tokenizers';
import { describe, expect, it } from 'vitest';
import { Rng } from '../../../../src/lib/util/random';
import { PieceCache, type AddedTokenSpec } from '../../../../src/lib/model/tokenizer/piece-cache';
import { Tokenizer } from '../../../../src/lib/model/tokenizer/tokenizer';
import { qwen3Files } from '../../../helpers/qwen3-tokenizer';

const FRAGMENTS = [
	'<|im_start|>',
	'<|im_end|>',
	'<|endoftext|>',
	'<tool_call>',
	'</tool_call>',
	'<think>',
	'<|im_sta',
	'<|im_start',
	'|>',
	'<',
	'user\n',
	'assistant\n',
	' ',
	'  ',
	'\n',
	'\n\n',
	'\t',
	'hello',
	' world',
	'A1',
	'<move>B2</move>',
	'x | o | _',
	'你好',
	'😀👍🏽',
	'e\u0301', // NFC composes this
	"it's",
	'123'
];

/** `count` texts of random fragments, with a fixed seed. */
function randomTexts(count: number, seed: number): string[] {
	const rng = new Rng(seed);
	return Array.from({ length: count }, () =>
		Array.from({ length: 1 + rng.int(14) }, () => FRAGMENTS[rng.int(FRAGMENTS.length)]).join('')
	);
}

/** The ids of `text` through the cache: its parts, each piece from the cache or `encodePiece`. */
function encodeWith(
	cache: PieceCache,
	text: string,
	encodePiece: (piece: string) => number[]
): number[] {
	return [...cache.parts(text)].flatMap((part) =>
		typeof part === 'number' ? [part] : cache.piece(part, encodePiece)
	);
}

interface TokenizerJson {
	added_tokens: AddedTokenSpec[];
	[key: string]: unknown;
}

function qwen3Json(patch: (json: TokenizerJson) => void = () => {}) {
	const { tokenizerJson, tokenizerConfig } = qwen3Files();
	const json = JSON.parse(tokenizerJson) as TokenizerJson;
	patch(json);
	const config = { ...tokenizerConfig, clean_up_tokenization_spaces: false };
	return {
		ours: Tokenizer.fromJson(json, config),
		reference: new HfTokenizer(json as never, config as never)
	};
}

describe('piece cache', () => {
	it('gives the uncached pipeline ids for chats and random texts (real Qwen3 tokenizer.json)', () => {
		const { ours, reference } = qwen3Json();
		const texts = [...randomTexts(400, 1)];
		const turns = [
			{ role: 'system' as const, content: 'You play tic-tac-toe as x.' },
			{ role: 'user' as const, content: '  A B C\n1 _ _ _\n2 _ x _\n3 _ _ o' },
			{ role: 'assistant' as const, content: '<move>A1</move>' },
			{ role: 'user' as const, content: 'x | o\n\n  trailing  ' }
		];
		for (let n = 1; n <= turns.length; n++)
			texts.push(ours.applyChatTemplate(turns.slice(0, n), { addGenerationPrompt: true }));
		// Twice: the second pass is served from the cache.
		for (const pass of [1, 2])
			for (const text of texts)
				expect(ours.encode(text), `pass ${pass}: ${JSON.stringify(text)}`).toEqual(
					reference.encode(text, { add_special_tokens: false }).ids
				);
	});

	it('still matches where added tokens strip their neighbours (lstrip / rstrip)', () => {
		const { ours, reference } = qwen3Json((json) => {
			for (const t of json.added_tokens) {
				if (t.content === '<|im_end|>') t.lstrip = true;
				if (t.content === '<|im_start|>') t.rstrip = true;
				if (t.content === '<tool_call>') t.lstrip = t.rstrip = true;
			}
		});
		for (const text of randomTexts(400, 2))
			expect(ours.encode(text), JSON.stringify(text)).toEqual(
				reference.encode(text, { add_special_tokens: false }).ids
			);
	});

	it('tokenizes only the pieces it has not seen', () => {
		const tokens: AddedTokenSpec[] = [
			{ id: 0, content: '<s>' },
			{ id: 1, content: '</s>' },
			{ id: 2, content: '<sp> ', rstrip: false }, // whitespace at an end: no cut there
			{ id: 3, content: '<l>', lstrip: true }
		];
		const cache = PieceCache.forTokenizer({}, tokens)!;
		const seen: string[] = [];
		const encodePiece = (piece: string) => {
			seen.push(piece);
			return [100 + piece.length];
		};
		expect(encodeWith(cache, '<s>user hi</s><s>bot', encodePiece)).toEqual([0, 107, 1, 0, 103]);
		expect(seen).toEqual(['user hi', 'bot']);
		seen.length = 0;
		expect(encodeWith(cache, '<s>user hi</s><s>bot ok</s>', encodePiece)).toEqual([
			0, 107, 1, 0, 106, 1
		]);
		expect(seen).toEqual(['bot ok']);
		seen.length = 0;
		// Tokens that touch their neighbours stay inside a piece for the pipeline to handle.
		encodeWith(cache, '<s>a <l> b<sp> c</s>', encodePiece);
		expect(seen).toEqual(['a <l> b<sp> c']);
	});

	it('forgets the least recently used pieces past its size (4M characters)', () => {
		const cache = PieceCache.forTokenizer({}, [{ id: 0, content: '<s>' }])!;
		const seen: string[] = [];
		const encodePiece = (piece: string) => (seen.push(piece), [1]);
		const pieces = Array.from({ length: 1100 }, (_, i) => `${i}:`.padEnd(4000, 'x'));
		encodeWith(cache, pieces[0], encodePiece);
		for (const p of pieces) {
			encodeWith(cache, p, encodePiece);
			encodeWith(cache, pieces[0], encodePiece); // kept fresh: never the oldest
		}
		expect(seen).toHaveLength(1100);
		seen.length = 0;
		for (const i of [0, 1099, 1000, 100, 50, 1]) encodeWith(cache, pieces[i], encodePiece);
		// 4 Mi characters hold 1048 of these pieces: the oldest ~52 (1, ...) were dropped, the
		// recent ones and 0 kept. (Piece names: their number before the colon.)
		const names = () => seen.map((p) => p.slice(0, p.indexOf(':')));
		expect(names()).toEqual(['50', '1']);
		// A piece longer than 4096 characters is never cached.
		const long = 'y'.repeat(5000);
		encodeWith(cache, long, encodePiece);
		encodeWith(cache, long, encodePiece);
		expect(seen.slice(2).map((p) => p.length)).toEqual([5000, 5000]);
	});

	it('is refused for a pre-tokenizer that prefixes only the first piece (Metaspace "first")', () => {
		const tokens = [{ id: 0, content: '<s>' }];
		const metaspace = (scheme: string) => ({ type: 'Metaspace', prepend_scheme: scheme });
		expect(PieceCache.forTokenizer({ pre_tokenizer: metaspace('first') }, tokens)).toBeNull();
		expect(
			PieceCache.forTokenizer(
				{ pre_tokenizer: { type: 'Sequence', pretokenizers: [metaspace('first')] } },
				tokens
			)
		).toBeNull();
		expect(PieceCache.forTokenizer({ pre_tokenizer: metaspace('always') }, tokens)).not.toBeNull();
		expect(PieceCache.forTokenizer({}, [])).toBeNull();
	});
});
