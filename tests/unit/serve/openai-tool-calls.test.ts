/**
 * Tool-call parsing (tool-calls.ts) and stop strings (stop-strings.ts) on text: whole
 * texts, and the same texts fed in every split (one character at a time, and at every
 * cut point), which must release exactly what the whole text gives.
 */
import { describe, expect, it } from 'vitest';
import { StopStringMatcher } from '../../../src/lib/serve/stop-strings';
import {
	parseToolCallBody,
	parseToolCalls,
	ToolCallStream,
	type ParsedToolCall
} from '../../../src/lib/serve/tool-calls';

/** Feeds `pieces` to a ToolCallStream; returns what it released in all. */
function streamed(pieces: string[]): { content: string; calls: ParsedToolCall[] } {
	const s = new ToolCallStream();
	let content = '';
	const calls: ParsedToolCall[] = [];
	for (const p of [...pieces.map((x) => s.push(x)), s.end()]) {
		content += p.content;
		calls.push(...p.calls);
	}
	return { content, calls };
}

/** Every way of cutting `text` in two, and one character at a time. */
function splits(text: string): string[][] {
	const out: string[][] = [[...text]];
	for (let k = 0; k <= text.length; k++) out.push([text.slice(0, k), text.slice(k)]);
	return out;
}

const WEATHER =
	'<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';

describe('parseToolCalls', () => {
	it('parses one Qwen-style call into a name and a JSON-string argument object', () => {
		const r = parseToolCalls(WEATHER);
		expect(r.content).toBeNull();
		expect(r.calls).toEqual([{ name: 'get_weather', arguments: '{"city":"Paris"}' }]);
		expect(JSON.parse(r.calls[0].arguments)).toEqual({ city: 'Paris' });
	});

	it('keeps the text around calls as content, without the whitespace next to them', () => {
		const text =
			'Let me check both.\n' +
			WEATHER +
			'\n<tool_call>\n{"name": "get_time", "arguments": {"tz": "CET"}}\n</tool_call>\n';
		const r = parseToolCalls(text);
		expect(r.content).toBe('Let me check both.');
		expect(r.calls.map((c) => c.name)).toEqual(['get_weather', 'get_time']);
		expect(JSON.parse(r.calls[1].arguments)).toEqual({ tz: 'CET' });
	});

	it('keeps text between and after calls', () => {
		const r = parseToolCalls(`A ${WEATHER} B ${WEATHER} C`);
		expect(r.content).toBe('ABC');
		expect(r.calls).toHaveLength(2);
	});

	it('leaves a block with malformed JSON in the content, tags and all', () => {
		const bad = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Par\n</tool_call>';
		const r = parseToolCalls(`Trying.\n${bad}`);
		expect(r.calls).toEqual([]);
		expect(r.content).toBe(`Trying.\n${bad}`);
	});

	it('parses the good blocks and keeps a malformed one as content', () => {
		const bad = '<tool_call>not json</tool_call>';
		const r = parseToolCalls(`${WEATHER}\n${bad}`);
		expect(r.calls.map((c) => c.name)).toEqual(['get_weather']);
		expect(r.content).toBe(bad);
	});

	it('is not a call without a string name, or with arguments that are not an object', () => {
		for (const body of [
			'{"arguments": {}}',
			'{"name": "", "arguments": {}}',
			'{"name": 3}',
			'{"name": "f", "arguments": [1, 2]}',
			'{"name": "f", "arguments": 5}',
			'["f"]',
			'"f"'
		])
			expect(parseToolCallBody(body), body).toBeNull();
	});

	it('takes string arguments as given, no arguments as {}, and `parameters` as arguments', () => {
		expect(parseToolCallBody('{"name": "f", "arguments": "{\\"a\\": 1}"}')).toEqual({
			name: 'f',
			arguments: '{"a": 1}'
		});
		expect(parseToolCallBody('{"name": "f"}')).toEqual({ name: 'f', arguments: '{}' });
		expect(parseToolCallBody('{"name": "f", "parameters": {"x": [1]}}')).toEqual({
			name: 'f',
			arguments: '{"x":[1]}'
		});
	});

	it('leaves a block that never closes in the content, unless the reply was cut by max_tokens', () => {
		const cut = 'Sure.\n<tool_call>\n{"name": "get_weather", "argu';
		expect(parseToolCalls(cut)).toEqual({ content: cut, calls: [] });
		// cut by max_tokens (finish_reason "length"): a call cut short, no template markup left
		for (const pieces of splits(cut)) {
			const stream = new ToolCallStream();
			let content = '';
			for (const piece of pieces) content += stream.push(piece).content;
			const end = stream.end({ dropOpenBlock: true });
			expect(content + end.content, JSON.stringify(pieces)).toBe('Sure.');
			expect(end.calls).toEqual([]);
		}
	});

	it('leaves plain text alone, and text that only looks like a tag start', () => {
		for (const text of ['hello world', 'a < b and <tool', 'x <tool_cal', '  spaced  ', ''])
			expect(parseToolCalls(text)).toEqual({ content: text, calls: [] });
	});
});

describe('ToolCallStream', () => {
	const texts = [
		WEATHER,
		`Let me check.\n${WEATHER}\n${WEATHER}\n`,
		`A ${WEATHER} B`,
		'Trying.\n<tool_call>{bad}</tool_call> end',
		'Sure.\n<tool_call>\n{"name": "cut',
		'no calls here, just text <tool',
		'trailing space   '
	];
	it('releases, over any split of the text, exactly what the whole text gives', () => {
		for (const text of texts) {
			const whole = parseToolCalls(text);
			for (const pieces of splits(text)) {
				const s = streamed(pieces);
				expect(s.calls, JSON.stringify(pieces)).toEqual(whole.calls);
				expect(s.content, JSON.stringify(pieces)).toBe(whole.content ?? '');
			}
		}
	});

	it('releases plain text as soon as it cannot start a block', () => {
		const s = new ToolCallStream();
		expect(s.push('Hello').content).toBe('Hello');
		expect(s.push(' there <tool').content).toBe(' there');
		expect(s.push('box').content).toBe(' <toolbox');
		expect(s.push(' <tool_call>{"name": "f"}').content).toBe('');
		const done = s.push('</tool_call>');
		expect(done.calls).toEqual([{ name: 'f', arguments: '{}' }]);
	});
});

describe('StopStringMatcher', () => {
	function run(stops: string[], pieces: string[]): { text: string; stopped: boolean } {
		const m = new StopStringMatcher(stops);
		let text = '';
		for (const p of pieces) {
			const r = m.push(p);
			text += r.text;
			if (r.stopped) return { text, stopped: true };
		}
		return { text: text + m.end(), stopped: false };
	}

	it('cuts the text before the first stop string, whatever the split', () => {
		const text = 'one, two. three. four';
		for (const pieces of splits(text)) {
			expect(run(['.'], pieces)).toEqual({ text: 'one, two', stopped: true });
			expect(run(['three', ', t'], pieces)).toEqual({ text: 'one', stopped: true });
			expect(run(['END'], pieces)).toEqual({ text, stopped: false });
		}
	});

	it('holds back only what may still become a stop string', () => {
		const m = new StopStringMatcher(['###']);
		expect(m.push('a#')).toEqual({ text: 'a', stopped: false });
		expect(m.push('b##')).toEqual({ text: '#b', stopped: false });
		expect(m.push('#c')).toEqual({ text: '', stopped: true });
		expect(m.end()).toBe('');
	});

	it('with no stop strings passes everything through', () => {
		expect(run([], ['a', 'b'])).toEqual({ text: 'ab', stopped: false });
	});
});
