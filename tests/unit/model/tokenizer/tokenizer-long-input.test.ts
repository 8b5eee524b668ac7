/**
 * Inputs far past any context window (a ~300 KB prompt once overflowed the stack in the
 * piece cache's `ids.push(...ids)`): Tokenizer.encode / encodeChat never recurse or spread
 * by input size, on the tiny fixture tokenizer (piece cache on) and on Qwen3's.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { makeFixture } from '../../../../src/lib/testing/fixtures';
import { Tokenizer } from '../../../../src/lib/model/tokenizer/tokenizer';
import { qwen3Tokenizer } from '../../../helpers/qwen3-tokenizer';

/** ~300 KB: about 125k Qwen3 tokens, ~300k of the tiny byte-level tokenizer's. */
const LONG = 'hello world, it is a long day. '.repeat(10_000);

describe('Tokenizer on very long inputs', () => {
	let qwen3: Tokenizer;
	beforeAll(() => {
		qwen3 = qwen3Tokenizer();
	});

	it('encodes a 300 KB text and chat (tiny fixture tokenizer)', () => {
		const files = makeFixture('llama', { seed: 5 }).files;
		const tokenizer = Tokenizer.fromJson(
			files.get('tokenizer.json') as string,
			files.get('tokenizer_config.json') as string
		);
		const ids = tokenizer.encode(LONG);
		expect(ids.length).toBeGreaterThan(100_000);
		const chat = tokenizer.encodeChat([{ role: 'user', content: LONG }], {
			addGenerationPrompt: true
		});
		expect(chat.length).toBeGreaterThan(ids.length);
	});

	it('parts, each piece encoded, concatenate to encode (pieces between special tokens)', () => {
		const tokenizer = qwen3;
		const text = tokenizer.applyChatTemplate(
			[
				{ role: 'system', content: 'be brief' },
				{ role: 'user', content: LONG.slice(0, 5000) }
			],
			{ addGenerationPrompt: true }
		);
		const parts = [...tokenizer.parts(text)];
		expect(parts.length).toBeGreaterThan(4);
		expect(parts.some((p) => typeof p === 'number')).toBe(true);
		const ids = parts.flatMap((p) => (typeof p === 'number' ? [p] : tokenizer.encodePiece(p)));
		expect(ids).toEqual(tokenizer.encode(text));
	});

	it('encodes a 300 KB text (Qwen3 tokenizer)', () => {
		const ids = qwen3.encode(LONG);
		expect(ids.length).toBeGreaterThan(50_000);
		expect(ids.slice(0, 8)).toEqual(qwen3.encode(LONG.slice(0, 31)).slice(0, 8));
	});
});
