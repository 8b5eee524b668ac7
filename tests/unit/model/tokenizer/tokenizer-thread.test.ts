/**
 * The tokenizer thread (src/lib/model/tokenizer/node/tokenizer-thread.ts): ids equal to the synchronous
 * Tokenizer's (the tiny fixture tokenizer: long words, special tokens, a whole prompt
 * through encodePrompt), errors typed as on the main thread, and an aborted piece
 * stops the thread's work (the thread is replaced, the next piece does not wait for it).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { buildPrompt, encodePrompt } from '../../../../src/lib/serve/prompt';
import { TokenizerError } from '../../../../src/lib/model/errors';
import { Tokenizer } from '../../../../src/lib/model/tokenizer/tokenizer';
import { OffThreadPieceEncoder } from '../../../../src/lib/model/tokenizer/node/tokenizer-thread';
import { makeFixture } from '../../../../src/lib/testing/fixtures';

const files = makeFixture('llama', { seed: 5 }).files;
const tinyFiles = {
	tokenizerJson: files.get('tokenizer.json') as string,
	tokenizerConfigJson: files.get('tokenizer_config.json') as string
};
const tiny = Tokenizer.fromJson(tinyFiles.tokenizerJson, tinyFiles.tokenizerConfigJson);

/** Letters in an order no merge knows: one pre-token, BPE's worst case. */
const LETTERS = Array.from({ length: 26 }, (_, i) => String.fromCharCode(97 + ((i * 7) % 26))).join(
	''
);
const word = (length: number) => LETTERS.repeat(Math.ceil(length / 26)).slice(0, length);

const TEXTS = [
	'hello',
	word(20_000),
	' the quick brown fox, '.repeat(500),
	'<|im_start|>user\n' + word(5000) + '<|im_end|>\n<|im_start|>assistant\n',
	'你好 😀👍🏽 e\u0301 ' + 'x'.repeat(6000)
];

describe('OffThreadPieceEncoder', () => {
	const encoders: OffThreadPieceEncoder[] = [];
	const encoder = (f: ConstructorParameters<typeof OffThreadPieceEncoder>[0]) => {
		const e = new OffThreadPieceEncoder(f);
		encoders.push(e);
		return e;
	};
	/** The tiny tokenizer's thread, shared (each start costs ~0.5 s: tsx, then the tokenizer). */
	const thread = encoder(tinyFiles);
	afterAll(async () => {
		for (const e of encoders) await e.close();
	});

	it('gives the synchronous tokenizer ids', async () => {
		for (const text of TEXTS)
			expect(Array.from(await thread.encode(text)), text.slice(0, 40)).toEqual(tiny.encode(text));
	});

	it('gives encodePrompt the same prompt with long pieces on the thread', async () => {
		expect(thread.minChars).toBe(4097);
		const request = {
			messages: [
				{ role: 'system' as const, content: 'be brief' },
				{ role: 'user' as const, content: word(9000) },
				{ role: 'assistant' as const, content: 'ok' },
				{ role: 'user' as const, content: 'and ' + word(5000) }
			],
			tools: undefined,
			chatTemplateKwargs: {},
			maxTokens: 1
		};
		const sent: string[] = [];
		const spy = {
			minChars: thread.minChars,
			encode(piece: string, signal?: AbortSignal) {
				sent.push(piece);
				return thread.encode(piece, signal);
			}
		};
		const prompt = await encodePrompt(tiny, request, 100_000, { pieceEncoder: spy });
		// The two long messages' pieces ("user\n" + text), not the short ones.
		expect(sent.map((p) => p.length)).toEqual([9005, 5009]);
		expect(prompt).toEqual(buildPrompt(tiny, request, 100_000));
	});

	it('rejects with a TokenizerError, the same message, where the vocabulary cannot represent a piece', async () => {
		// A word-level vocabulary with no unk token: "abc" is no token of it.
		const json = JSON.stringify({
			model: { type: 'WordLevel', vocab: { a: 0, ab: 1 } },
			added_tokens: []
		});
		const sync = Tokenizer.fromJson(json, '{}');
		const message = (() => {
			try {
				sync.encode('abc');
			} catch (e) {
				expect(e).toBeInstanceOf(TokenizerError);
				return (e as Error).message;
			}
		})();
		expect(message).toMatch(/cannot represent \(token "abc"\)/);
		const thread = encoder({ tokenizerJson: json, tokenizerConfigJson: '{}' });
		const error = await thread.encode('abc').catch((e: unknown) => e);
		expect(error).toBeInstanceOf(TokenizerError);
		expect((error as Error).message).toBe(message);
		// The thread survives a bad piece.
		expect(Array.from(await thread.encode('ab'))).toEqual([1]);
	});

	it('stops the work of an aborted piece: the thread is replaced, the next piece does not wait', async () => {
		expect(Array.from(await thread.encode('warm up'))).toEqual(tiny.encode('warm up'));
		const started = thread.threadsStarted;
		// ~6 s of BPE for the tiny tokenizer (1.5 us a character here).
		const huge = word(4_000_000);
		const controller = new AbortController();
		const reason = new Error('client gone');
		const pending = thread.encode(huge, controller.signal);
		await new Promise((r) => setTimeout(r, 300));
		const t0 = performance.now();
		controller.abort(reason);
		await expect(pending).rejects.toBe(reason);
		const rejected = performance.now() - t0;
		// A piece queued behind it, and one sent later, are answered by a new thread.
		const t1 = performance.now();
		expect(Array.from(await thread.encode('next one'))).toEqual(tiny.encode('next one'));
		const next = performance.now() - t1;
		console.log(
			`aborted piece rejected in ${rejected.toFixed(0)} ms; next piece answered in ${next.toFixed(0)} ms (new thread)`
		);
		expect(thread.threadsStarted).toBe(started + 1);
		expect(rejected).toBeLessThan(100);
		// Had the old thread gone on, the next piece would wait ~5 s more for it.
		expect(next).toBeLessThan(2500);
		// Already aborted: refused without touching the thread.
		await expect(thread.encode(huge, AbortSignal.abort(reason))).rejects.toBe(reason);
		expect(thread.threadsStarted).toBe(started + 1);
	});

	it('refuses pieces once closed', async () => {
		const closed = encoder(tinyFiles);
		await closed.close();
		await expect(closed.encode('x')).rejects.toThrow(/closed/);
	});
});
