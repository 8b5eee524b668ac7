import { describe, expect, it } from 'vitest';
import {
	ChatMessagesError,
	ChatTemplateError,
	NoChatTemplateError,
	TokenizerError
} from '../../../../src/lib/model/errors';
import { Tokenizer } from '../../../../src/lib/model/tokenizer/tokenizer';
import { parseChatRequest } from '../../../../src/lib/model/tokenizer/chat-template';
import type { ChatMessage } from '../../../../src/lib/model/tokenizer/chat-messages';
import { qwen3Files, qwen3Tokenizer } from '../../../helpers/qwen3-tokenizer';

const UNICODE_TEXTS = [
	'Hello world',
	'你好，世界！ こんにちは 안녕하세요',
	'😀👩\u200d👩\u200d👧🇫🇷👍🏽🧮 emoji',
	'مرحبا بالعالم Ελληνικά Русский עברית हिन्दी ไทย',
	'∑∫√∞ ≠ ≤ ½ ™ ©  \t tabs\r\nCRLF\n\n\n  ',
	'nbsp\u00a0ideographic\u3000nel\u0085line-sep\u2028bom\ufeffend'
];

/** A tokenizer over the Qwen3 files with another tokenizer_config / chat template. */
function withConfig(patch: Record<string, unknown>, chatTemplateJinja?: string): Tokenizer {
	const { tokenizerJson, tokenizerConfig } = qwen3Files();
	const config: Record<string, unknown> = { ...tokenizerConfig, ...patch };
	for (const [k, v] of Object.entries(patch)) if (v === undefined) delete config[k];
	return Tokenizer.fromJson(tokenizerJson, config, chatTemplateJinja);
}

const user = (content: string): ChatMessage => ({ role: 'user', content });

describe('Tokenizer (real Qwen3 tokenizer.json)', () => {
	const tok = qwen3Tokenizer();

	it('knows its vocabulary and special tokens', () => {
		// 151643 BPE tokens + 26 added tokens (tokenizer.json's added_tokens).
		expect(tok.vocabSize).toBe(151669);
		expect(tok.eosTokenIds).toEqual([151645]); // <|im_end|>
		expect(tok.padTokenId).toBe(151643); // <|endoftext|>
		expect(tok.bosTokenId).toBeUndefined(); // Qwen3 has none
		expect(tok.specialTokens.map((t) => t.content)).toContain('<|im_start|>');
		expect(tok.isSpecial(151644)).toBe(true);
		expect(tok.isSpecial(151667)).toBe(false); // <think> is added but not special
		expect(tok.hasChatTemplate).toBe(true);
	});

	it('encodes special-token strings to their single ids', () => {
		expect(tok.encode('<|im_start|>')).toEqual([151644]);
		expect(tok.encode('<|im_end|>')).toEqual([151645]);
		expect(tok.encode('<|endoftext|>')).toEqual([151643]);
		expect(tok.encode('<think>')).toEqual([151667]);
		expect(tok.encode('</tool_call>')).toEqual([151658]);
		expect(tok.encode('<|im_start|>user\nhi<|im_end|>')).toEqual([
			151644,
			...tok.encode('user\nhi'),
			151645
		]);
	});

	it('encodes plain text as Qwen BPE does', () => {
		expect(tok.encode('Hello world')).toEqual([9707, 1879]);
		// \p{N} is split one digit at a time by the pre-tokenizer.
		expect(tok.encode('12345').length).toBe(5);
		expect(tok.encode('')).toEqual([]);
		// Qwen's post-processor adds nothing, with or without special tokens.
		expect(tok.encode('Hello world', { addSpecialTokens: true })).toEqual([9707, 1879]);
	});

	it('round-trips unicode text (up to NFC, the normalizer)', () => {
		for (const text of UNICODE_TEXTS)
			expect(tok.decode(tok.encode(text))).toBe(text.normalize('NFC'));
		expect(tok.decode(tok.encode('e\u0301'))).toBe('\u00e9');
	});

	it('skips special tokens on request', () => {
		const ids = tok.encode('<|im_start|>assistant\nHi<|im_end|>');
		expect(tok.decode(ids)).toBe('<|im_start|>assistant\nHi<|im_end|>');
		expect(tok.decode(ids, { skipSpecialTokens: true })).toBe('assistant\nHi');
		expect(tok.decode([])).toBe('');
	});

	it('decodes incrementally without splitting a character', () => {
		const text = '你好😀 👩\u200d👩\u200d👧 ok 🇫🇷 ἀλήθεια ﷺ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 done';
		const ids = tok.encode(text);
		// Control: this text has tokens that are partial UTF-8 characters on their own.
		const partial = ids.filter((id) => tok.decode([id]).includes('\uFFFD'));
		expect(partial.length).toBeGreaterThan(3);

		const stream = tok.decodeStream();
		const pieces = ids.map((id) => stream.push(id));
		for (const p of pieces) expect(p).not.toContain('\uFFFD');
		expect(pieces.filter((p) => p === '').length).toBeGreaterThan(0); // it did hold back
		expect(stream.flush()).toBe('');
		expect(pieces.join('')).toBe(tok.decode(ids));
		expect(stream.text).toBe(text);
	});

	it('incremental decode: skips specials, and flush gives what a stopped stream holds', () => {
		const stream = tok.decodeStream({ skipSpecialTokens: true });
		const ids = tok.encode('<|im_start|>assistant\n好<|im_end|>');
		const out = ids.map((id) => stream.push(id)).join('');
		expect(out).toBe('assistant\n好');
		// A stream cut after the first byte of a 4-byte character: held back, flushed as U+FFFD.
		const first = tok.encode('𝔘𝔫𝔦𝔠𝔬𝔡𝔢')[0];
		expect(tok.decode([first])).toContain('\uFFFD');
		const cut = tok.decodeStream();
		expect(cut.push(first)).toBe('');
		expect(cut.flush()).toContain('\uFFFD');
	});

	it("streams remember short decodes per tokenizer: a second stream's pieces are the first's", () => {
		// the memo is keyed on the ids and skipSpecialTokens: the same text, specials kept or not
		const ids = tok.encode('<|im_start|>assistant\n<move>B2</move> 𝔘好 ok<|im_end|>');
		const run = (skip: boolean) => {
			const stream = tok.decodeStream({ skipSpecialTokens: skip });
			return [...ids.map((id) => stream.push(id)), stream.flush()];
		};
		for (const skip of [false, true]) {
			const first = run(skip);
			expect(first.join('')).toBe(tok.decode(ids, { skipSpecialTokens: skip }));
			expect(run(skip)).toEqual(first);
		}
		expect(run(true).join('')).not.toContain('<|im_start|>');
		expect(run(false).join('')).toContain('<|im_start|>');
	});

	it('drops ids past the vocabulary (as Rust tokenizers do); rejects bad ids and non-string text', () => {
		expect(tok.decode([9707, 151669, 151935, 1879])).toBe('Hello world');
		expect(() => tok.decode([-1])).toThrow(TokenizerError);
		expect(() => tok.decode([1.5])).toThrow(TokenizerError);
		expect(() => tok.encode(42 as unknown as string)).toThrow(TokenizerError);
	});

	it('rejects a tokenizer.json that is not one', () => {
		expect(() => Tokenizer.fromJson('{not json')).toThrow(TokenizerError);
		expect(() => Tokenizer.fromJson({ version: '1.0' })).toThrow(/no "model" section/);
	});
});

describe('chat template plumbing', () => {
	const tok = qwen3Tokenizer();

	it('missing template -> typed error saying the model has none', () => {
		const t = withConfig({ chat_template: undefined });
		expect(t.hasChatTemplate).toBe(false);
		expect(() => t.applyChatTemplate([user('hi')])).toThrow(NoChatTemplateError);
		expect(() => t.encodeChat([user('hi')])).toThrow(/has no chat template/);
	});

	it('list-form chat_template: tool_use with tools (even []), default otherwise, or by name', () => {
		const t = withConfig({
			chat_template: [
				{ name: 'default', template: 'D:{{ messages[0].content }}' },
				{ name: 'tool_use', template: 'T:{{ tools | length }}' },
				{ name: 'rag', template: 'R' }
			]
		});
		expect(t.applyChatTemplate([user('hi')])).toBe('D:hi');
		expect(t.applyChatTemplate([user('hi')], { tools: [] })).toBe('T:0');
		const tool = { type: 'function' as const, function: { name: 'f' } };
		expect(t.applyChatTemplate([user('hi')], { tools: [tool] })).toBe('T:1');
		expect(t.applyChatTemplate([user('hi')], { tools: [tool], templateName: 'rag' })).toBe('R');
		expect(() => t.applyChatTemplate([user('hi')], { templateName: 'nope' })).toThrow(
			NoChatTemplateError
		);
		const noDefault = withConfig({ chat_template: [{ name: 'tool_use', template: 'T' }] });
		expect(() => noDefault.applyChatTemplate([user('hi')])).toThrow(/none named 'default'/);
		expect(noDefault.applyChatTemplate([user('hi')], { tools: [] })).toBe('T');
	});

	it('chat_template.jinja wins over tokenizer_config.json', () => {
		const t = withConfig({}, 'J:{{ messages | length }}');
		expect(t.applyChatTemplate([user('a'), user('b')])).toBe('J:2');
	});

	it('bad template -> ChatTemplateError; raise_exception keeps the template message', () => {
		const syntax = withConfig({ chat_template: '{% if messages %}never closed' });
		expect(() => syntax.applyChatTemplate([user('hi')])).toThrow(ChatTemplateError);
		const raising = withConfig({
			chat_template:
				"{% for m in messages %}{% if m.role not in ['user', 'assistant'] %}" +
				"{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %}ok"
		});
		expect(raising.applyChatTemplate([user('hi')])).toBe('ok');
		try {
			raising.applyChatTemplate([{ role: 'system', content: 'x' }]);
			expect.unreachable();
		} catch (e) {
			expect(e).toBeInstanceOf(ChatTemplateError);
			const err = e as ChatTemplateError;
			expect(err.kind).toBe('chat-template');
			expect(err.raisedByTemplate).toBe(true);
			expect(err.templateMessage).toBe('Only user and assistant roles are supported!');
		}
		const broken = withConfig({ chat_template: '{{ messages[0].content.nosuchmethod() }}' });
		expect(() => broken.applyChatTemplate([user('hi')])).toThrow(ChatTemplateError);
	});

	it('malformed messages and tools -> ChatMessagesError', () => {
		const bad: unknown[] = [
			[],
			'hello',
			[null],
			[{ content: 'no role' }],
			[{ role: 7, content: 'x' }],
			[{ role: 'user', content: 42 }],
			[{ role: 'assistant', content: '', tool_calls: {} }],
			[
				{
					role: 'assistant',
					content: '',
					tool_calls: [{ function: { name: '', arguments: '{}' } }]
				}
			],
			[{ role: 'assistant', content: '', tool_calls: [{ function: { name: 'f', arguments: 3 } }] }],
			[{ role: 'tool', content: 'x', tool_call_id: 5 }]
		];
		for (const messages of bad)
			expect(() => tok.applyChatTemplate(messages as ChatMessage[])).toThrow(ChatMessagesError);
		expect(() => tok.applyChatTemplate([user('hi')], { tools: {} as never })).toThrow(
			ChatMessagesError
		);
		expect(() => tok.applyChatTemplate([user('hi')], { tools: ['f'] as never })).toThrow(
			ChatMessagesError
		);
		expect(() => tok.applyChatTemplate([user('hi')], { vars: { messages: [] } })).toThrow(
			ChatMessagesError
		);
	});

	it('provides the special tokens, extra vars and strftime_now as transformers does', () => {
		const t = withConfig({
			eos_token: { content: '<|im_end|>', __type: 'AddedToken' },
			chat_template:
				'{{ bos_token is defined }}|{{ eos_token }}|{{ pad_token }}|{{ additional_special_tokens[0] }}|' +
				'{{ add_generation_prompt }}|{{ tools is none }}|{{ documents is none }}|{{ custom }}|' +
				'{{ enable_thinking is defined }}|{{ strftime_now("%d %b %Y %A %H:%M") }}'
		});
		const now = new Date(2024, 6, 26, 9, 5);
		expect(t.applyChatTemplate([user('x')], { vars: { custom: 'C' }, now })).toBe(
			'false|<|im_end|>|<|endoftext|>|<|im_start|>|false|true|true|C|false|26 Jul 2024 Friday 09:05'
		);
		expect(
			t.applyChatTemplate([user('x')], { vars: { eos_token: 'E' }, enableThinking: false, now })
		).toMatch(/^false\|E\|.*\|true\|26 Jul/);
	});

	it("strips as Python's str.strip/lstrip/rstrip (chars argument, Python whitespace)", () => {
		const t = withConfig({
			chat_template:
				"{% set s = messages[0].content %}[{{ s.strip('\\n') }}][{{ s.lstrip('\\n') }}][{{ s.rstrip('\\n') }}]" +
				"[{{ s.strip() }}][{{ s.strip('\\n x') }}][{{ s.lstrip(none) }}]"
		});
		expect(t.applyChatTemplate([user('\n\n x \n\n')])).toBe('[ x ][ x \n\n][\n\n x ][x][][x \n\n]');
		// U+FEFF is not whitespace in Python (JavaScript's trim() removes it); U+0085 is.
		expect(t.applyChatTemplate([user('\ufeff\u0085y\u0085')])).toContain('[\ufeff\u0085y]');
	});

	it('parses a --chat request file', () => {
		const { messages, options } = parseChatRequest({
			messages: [user('hi')],
			add_generation_prompt: true,
			enable_thinking: false
		});
		expect(tok.applyChatTemplate(messages, options)).toBe(
			'<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n'
		);
		expect(parseChatRequest({ messages: [user('hi')] }).options.addGenerationPrompt).toBe(false);
		expect(() => parseChatRequest({ messages: [user('hi')], add_generation_promt: true })).toThrow(
			/Unknown key/
		);
		expect(() =>
			parseChatRequest({ messages: [user('hi')], add_generation_prompt: 'yes' })
		).toThrow(ChatMessagesError);
		expect(() => parseChatRequest([])).toThrow(ChatMessagesError);
		expect(() => parseChatRequest({ tools: [] })).toThrow(ChatMessagesError);
	});
});
