/**
 * ChoiceDecoder (choice.ts) with the fixtures' real tiny byte-level BPE tokenizer: ids of a
 * known text pushed one at a time give back the text (special tokens skipped), tool calls
 * parsed out, stop strings cut, and OpenAI logprob entries whose bytes add up to the
 * text's UTF-8, multi-byte characters split over tokens included.
 */
import { describe, expect, it } from 'vitest';
import { ChoiceDecoder, type ChoiceOptions } from '../../../src/lib/serve/choice';
import { tinyTokenizer } from '../../../src/lib/testing/tiny-tokenizer';
import { Tokenizer } from '../../../src/lib/model/tokenizer/tokenizer';

const tok = tinyTokenizer();
const tokenizer = Tokenizer.fromJson(tok.tokenizerJson, tok.tokenizerConfigJson);
const END = tok.ids.imEnd;

/** Pushes `ids` with made-up logprobs -(k+1)/10; returns the decoder and the summed deltas. */
function decode(ids: number[], options: Partial<ChoiceOptions> = {}) {
	const d = new ChoiceDecoder(tokenizer, {
		stop: [],
		parseTools: false,
		logprobs: true,
		...options
	});
	let content = '';
	let calls = 0;
	let pushed = 0;
	for (const [k, id] of ids.entries()) {
		const delta = d.push(id, -(k + 1) / 10);
		content += delta.content;
		calls += delta.calls.length;
		pushed++;
		if (d.stoppedByString) break;
	}
	const last = d.finish();
	content += last.content;
	calls += last.calls.length;
	return { d, content, calls, pushed };
}

describe('ChoiceDecoder', () => {
	it('decodes text token by token, the end token writing nothing', () => {
		const text = 'hello world, the answer.';
		const { d, content } = decode([...tokenizer.encode(text), END]);
		expect(content).toBe(text);
		expect(d.content).toBe(text);
		expect(d.ids.at(-1)).toBe(END);
		expect(d.logprobs).toHaveLength(d.ids.length);
	});

	it('parses a tool call out of the content when the request has tools', () => {
		const text =
			'Sure.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
		const ids = [...tokenizer.encode(text), END];
		// <tool_call> is one added token in this tokenizer (as in Qwen's).
		expect(ids).toContain(tokenizer.tokenToId('<tool_call>'));
		const withTools = decode(ids, { parseTools: true });
		expect(withTools.content).toBe('Sure.');
		expect(withTools.d.calls).toEqual([{ name: 'get_weather', arguments: '{"city":"Paris"}' }]);
		expect(withTools.calls).toBe(1);
		const without = decode(ids, { parseTools: false });
		expect(without.content).toBe(text);
		expect(without.d.calls).toEqual([]);
	});

	it('stops at a stop string and leaves it out of the text, keeping the sampled ids', () => {
		const text = 'the cat sat. the dog ran.';
		const ids = tokenizer.encode(text);
		const { d, content, pushed } = decode(ids, { stop: ['sat.'] });
		expect(d.stoppedByString).toBe(true);
		expect(content).toBe('the cat ');
		expect(pushed).toBeLessThan(ids.length);
		expect(d.ids).toEqual(ids.slice(0, pushed));
		expect(tokenizer.decode(d.ids)).toContain('sat.');
	});

	it('gives one logprob entry per sampled token, bytes exact even inside a character', () => {
		const text = 'café ☕ ok';
		const ids = tokenizer.encode(text);
		const { d } = decode(ids);
		expect(d.content).toBe(text);
		expect(d.logprobEntries).toHaveLength(ids.length);
		expect(d.logprobEntries.map((e) => e.logprob)).toEqual(ids.map((_, k) => -(k + 1) / 10));
		const bytes = d.logprobEntries.flatMap((e) => e.bytes ?? []);
		expect(bytes).toEqual([...new TextEncoder().encode(text)]);
		// The emoji is several byte tokens here: their text alone is U+FFFD.
		expect(d.logprobEntries.some((e) => e.token.includes('\uFFFD'))).toBe(true);
		for (const e of d.logprobEntries) expect(e.top_logprobs).toEqual([]);
	});

	it('writes a logprob that is not finite as -9999', () => {
		const d = new ChoiceDecoder(tokenizer, { stop: [], parseTools: false, logprobs: true });
		expect(d.push(tokenizer.encode('a')[0], -Infinity).logprobs[0].logprob).toBe(-9999);
		expect(d.logprobs[0]).toBe(-Infinity);
	});
});
