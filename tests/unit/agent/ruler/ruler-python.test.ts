/**
 * RULER's text, byte for byte against Python (tests/fixtures/ruler/, written by
 * tools/ruler-fixtures.py with Python's own textwrap and json modules, without ART):
 * textwrap.dedent, json.dumps with its defaults, == on JSON values, ART's system prompt for
 * the default and custom rubrics, and the judge's messages for message lists with unicode,
 * control characters, tool calls, nested values and floats, shared and unshared prefixes,
 * identical and duplicated trajectories, as ART builds them and as TabRL's dedupe does.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { dedent } from '../../../../src/lib/agent/ruler/py-dedent';
import { pyEqual } from '../../../../src/lib/agent/ruler/py-equal';
import { pyFloatRepr, pyJsonDumps } from '../../../../src/lib/agent/ruler/py-json';
import {
	buildJudgePrompt,
	DEFAULT_RUBRIC,
	judgeSystemPrompt
} from '../../../../src/lib/agent/ruler/prompt';

const DIR = join(import.meta.dirname, '../../../fixtures/ruler');
const fixture = <T>(name: string): T => JSON.parse(readFileSync(join(DIR, name), 'utf8')) as T;

interface PythonFixture {
	dedent: { text: string; dedented: string }[];
	dumps: { value: string; dumps: string }[];
	equal: { a: string; b: string; equal: 'true' | 'false' }[];
}
interface PromptsFixture {
	default_rubric: string;
	system_prompts: { rubric: string; system: string }[];
}
interface Message {
	role: string;
	content: string;
}
interface JudgeCase {
	name: string;
	message_lists: string;
	tools: string;
	rubric: string;
	art: Message[];
	deduped: Message[];
	distinct_of: string;
}

const python = fixture<PythonFixture>('python.json');
const prompts = fixture<PromptsFixture>('prompts.json');
const { cases } = fixture<{ cases: JudgeCase[] }>('judge-messages.json');

describe('Python semantics RULER depends on', () => {
	it('dedent equals textwrap.dedent on every case', () => {
		expect(python.dedent.length).toBeGreaterThan(10);
		for (const c of python.dedent) expect(dedent(c.text), JSON.stringify(c.text)).toBe(c.dedented);
	});

	it('pyJsonDumps equals json.dumps on every value', () => {
		for (const c of python.dumps) expect(pyJsonDumps(JSON.parse(c.value))).toBe(c.dumps);
	});

	it('pyEqual equals == on every pair (True == 1, key order free, "1" != 1)', () => {
		for (const c of python.equal)
			expect(pyEqual(JSON.parse(c.a), JSON.parse(c.b)), `${c.a} == ${c.b}`).toBe(
				c.equal === 'true'
			);
	});

	it('floats as Python repr: thresholds of the exponent form, -0.0, integral values', () => {
		expect(pyFloatRepr(1e-5)).toBe('1e-05');
		expect(pyFloatRepr(0.0001)).toBe('0.0001');
		expect(pyFloatRepr(1e16)).toBe('1e+16');
		expect(pyFloatRepr(1e15)).toBe('1000000000000000.0');
		expect(pyFloatRepr(-1.5e-7)).toBe('-1.5e-07');
		expect(pyFloatRepr(2 ** 53)).toBe('9007199254740992.0');
		expect(pyJsonDumps([-0, 2 ** 53, 2 ** 53 - 1, NaN, Infinity, -Infinity])).toBe(
			'[-0.0, 9007199254740992.0, 9007199254740991, NaN, Infinity, -Infinity]'
		);
		// The documented difference: a float with an integral value below 2^53 is written
		// as an int (Python: 2.0), since a JavaScript number cannot tell 2.0 from 2.
		expect(pyJsonDumps(2.0)).toBe('2');
	});

	it('JSON.stringify conventions for values JSON has no room for', () => {
		expect(pyJsonDumps({ a: undefined, b: [undefined], c: 1n })).toBe('{"b": [null], "c": 1}');
		expect(() => pyJsonDumps({ f: () => 1 })).toThrow(/not JSON serializable/);
		const loop: Record<string, unknown> = {};
		loop.self = loop;
		expect(() => pyJsonDumps(loop)).toThrow(/Circular/);
	});
});

describe("ART's judge prompt", () => {
	it('the default rubric is ART’s DEFAULT_RUBRIC', () => {
		expect(DEFAULT_RUBRIC).toBe(prompts.default_rubric);
	});

	it('the system prompt for the default and custom rubrics is byte-identical to ART’s', () => {
		expect(prompts.system_prompts.length).toBeGreaterThan(5);
		for (const p of prompts.system_prompts)
			expect(judgeSystemPrompt(p.rubric), JSON.stringify(p.rubric)).toBe(p.system);
		expect(judgeSystemPrompt()).toBe(prompts.system_prompts[0].system);
		// ART's quirk, kept: the default rubric keeps the template's 8-space indent...
		expect(judgeSystemPrompt()).toContain('\n        Grading standards:\n\n- A trajectory');
		// ...and a one-line rubric lets dedent strip it.
		const one = prompts.system_prompts.find((p) => !p.rubric.includes('\n'))!;
		expect(one.system.startsWith('\nAll of the trajectories')).toBe(true);
	});

	for (const c of cases)
		it(`judge messages for '${c.name}' equal ART's (dedupe: false) and the deduped ones`, () => {
			const lists = JSON.parse(c.message_lists) as object[][];
			const tools = JSON.parse(c.tools) as unknown[] | null;
			const art = buildJudgePrompt(lists, { rubric: c.rubric, tools, dedupe: false });
			expect(art.messages[0].content).toBe(c.art[0].content);
			expect(art.messages[1].content).toBe(c.art[1].content);
			expect(art.messages).toEqual(c.art);
			const ours = buildJudgePrompt(lists, { rubric: c.rubric, tools });
			expect(ours.messages).toEqual(c.deduped);
			const distinctOf = JSON.parse(c.distinct_of) as number[];
			if (!ours.allIdentical) expect(ours.distinctOf).toEqual(distinctOf);
			expect(ours.ids).toEqual(
				Array.from({ length: ours.allIdentical ? 1 : new Set(distinctOf).size }, (_, i) =>
					String(i + 1)
				)
			);
		});

	it('the cases cover what they claim', () => {
		const byName = Object.fromEntries(cases.map((c) => [c.name, c]));
		const user = (name: string) => byName[name].art[1].content;
		expect(user('plain').startsWith('<context>\n[{"role": "system"')).toBe(true);
		expect(user('no-prefix').startsWith('Trajectories:\n\n<trajectory id="1">')).toBe(true);
		expect(user('tool-calls')).toContain('<available_tools>\n[{"type": "function"');
		expect(user('unicode')).toContain('\\ud83c\\udf89'); // 🎉 as a surrogate pair
		expect(user('control-chars')).toContain('\\u0000');
		expect(user('nested-and-numbers')).toContain('1e-05, 0.0001, 1.5e-07');
		expect(user('python-equality')).toContain('"cache": true'); // list 0's spelling kept
		expect(user('identical')).toBe(byName['identical'].deduped[1].content);
		expect(user('identical')).not.toContain('<context>');
		expect(user('duplicates')).toContain('<trajectory id="5">');
		expect(byName['duplicates'].deduped[1].content).not.toContain('<trajectory id="4">');
	});
});
