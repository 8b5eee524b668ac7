/**
 * The JSON-schema compiler and its byte-level recogniser (model/constrain/json-schema.ts,
 * grammar.ts), pure TypeScript: texts each schema must accept and refuse (unicode, escapes,
 * numbers, nested arrays and objects, enum, anyOf, $ref recursion, the RULER response in
 * its strict and pydantic spellings, whitespace bounds); random walks through the
 * recogniser (a random allowed byte at every step) that must end in JSON that parses and
 * validates (json-schema-check.ts, an independent validator); refused keywords named.
 */
import { describe, expect, it } from 'vitest';
import { SchemaError } from '../../../../src/lib/model/constrain/errors';
import type { Grammar } from '../../../../src/lib/model/constrain/grammar';
import { END, PRETTY_MAX_INDENT } from '../../../../src/lib/model/constrain/grammar-nodes';
import {
	jsonObjectGrammar,
	jsonSchemaGrammar
} from '../../../../src/lib/model/constrain/json-schema';
import { Rng } from '../../../../src/lib/util/random';
import {
	KITCHEN_SCHEMA,
	RULER_PYDANTIC_SCHEMA,
	RULER_SCHEMA,
	schemaErrors
} from './json-schema-check';

function expectTexts(g: Grammar, accept: string[], refuse: string[]) {
	for (const t of accept) expect(g.accepts(t), `accepts ${JSON.stringify(t)}`).toBe(true);
	for (const t of refuse) expect(g.accepts(t), `refuses ${JSON.stringify(t)}`).toBe(false);
}

/** A random text of the grammar: at each step a random allowed byte, closing bytes (and
 * the end) favoured so the walk ends; null when it runs past `limit` bytes. */
function randomText(g: Grammar, rng: Rng, limit = 4000): Uint8Array | null {
	let stacks = g.start();
	const bytes: number[] = [];
	const weight = (b: number) =>
		b === END ? 40 : '"}]'.includes(String.fromCharCode(b)) ? 30 : b >= 0x80 ? 0.05 : 1;
	while (bytes.length < limit) {
		const options: { b: number; next: ReturnType<Grammar['step']>; w: number }[] = [];
		for (let b = 0; b <= END; b++) {
			const next = g.step(stacks, b);
			if (next.length) options.push({ b, next, w: weight(b) });
		}
		expect(
			options.length,
			`stuck after ${JSON.stringify(new TextDecoder().decode(Uint8Array.from(bytes)))}`
		).toBeGreaterThan(0);
		let r = rng.next() * options.reduce((s, o) => s + o.w, 0);
		const pick = options.find((o) => (r -= o.w) < 0) ?? options.at(-1)!;
		if (pick.b === END) return Uint8Array.from(bytes);
		bytes.push(pick.b);
		stacks = pick.next;
	}
	return null;
}

describe('JSON schema -> grammar', () => {
	it('the RULER response, strict and as pydantic writes it', () => {
		for (const schema of [RULER_SCHEMA, RULER_PYDANTIC_SCHEMA])
			expectTexts(
				jsonSchemaGrammar(schema),
				[
					'{"scores": []}',
					'{"scores":[{"trajectory_id":"1","explanation":"","score":0}]}',
					'{"scores": [{"trajectory_id": "1", "explanation": "won \\"fast\\"\\n", "score": 0.75}, {"trajectory_id": "2", "explanation": "lost", "score": -1.5e-3}]}'
				],
				[
					'{}',
					'{"scores": [{"explanation": "ok", "trajectory_id": "1", "score": 1}]}', // not schema order
					'{"scores": [{"trajectory_id": 1, "explanation": "ok", "score": 1}]}',
					'{"scores": [{"trajectory_id": "1", "explanation": "ok"}]}',
					'{"scores": [{"trajectory_id": "1", "explanation": "ok", "score": 1, "x": 2}]}',
					'{"scores": []} ',
					' {"scores": []}',
					'```json\n{"scores": []}\n```',
					// compact by default: no newlines (pretty-printing only when asked for)
					'{\n  "scores": [\n    {\n      "trajectory_id": "1",\n      "explanation": "ok",\n      "score": 1\n    }\n  ]\n}'
				]
			);
		expect(
			jsonSchemaGrammar(RULER_SCHEMA, { maxIndent: PRETTY_MAX_INDENT }).accepts(
				'{\n  "scores": [\n    {\n      "trajectory_id": "1",\n      "explanation": "ok",\n      "score": 1\n    }\n  ]\n}'
			)
		).toBe(true);
	});

	it('strings: unicode, escapes, surrogates, control bytes, length in code points', () => {
		expectTexts(
			jsonSchemaGrammar({ type: 'string' }),
			[
				'""',
				'"héllo wörld"',
				'"日本語 🎉 𝄞"',
				'"\\" \\\\ \\/ \\b \\f \\n \\r \\t"',
				'"\\u00e9\\u20AC\\uFFFF\\u0000"',
				'"\u007f"'
			],
			[
				'"a',
				'"\n"', // raw control byte
				'"\t"',
				'"\\x41"',
				'"\\u12"',
				'"\\ud83d\\ude00"', // surrogate escapes are refused (write the character itself)
				'"\\uDFFF"',
				"'a'"
			]
		);
		const bad = [
			[0x22, 0xc3, 0x22], // truncated 2-byte character
			[0x22, 0xc0, 0x80, 0x22], // overlong
			[0x22, 0xe0, 0x80, 0x80, 0x22], // overlong 3-byte
			[0x22, 0xed, 0xa0, 0x80, 0x22], // UTF-8 surrogate
			[0x22, 0xf4, 0x90, 0x80, 0x80, 0x22], // past U+10FFFF
			[0x22, 0xff, 0x22],
			[0x22, 0x80, 0x22]
		];
		const g = jsonSchemaGrammar({ type: 'string' });
		for (const b of bad) expect(g.accepts(Uint8Array.from(b)), `${b}`).toBe(false);
		expectTexts(
			jsonSchemaGrammar({ type: 'string', minLength: 2, maxLength: 3 }),
			['"ab"', '"日本語"', '"🎉🎉"', '"\\n\\t"', '"a\\u00e9b"'],
			['"a"', '""', '"abcd"', '"日本語!"', '"\\n\\n\\n\\n"']
		);
	});

	it('numbers and integers: JSON grammar, bounded digits', () => {
		expectTexts(
			jsonSchemaGrammar({ type: 'number' }),
			[
				'0',
				'7',
				'-0.5',
				'-0.05',
				'-12.5',
				'0.001',
				'1e5',
				'1E+5',
				'2.5e-10',
				'123456789012345',
				'0.123456789012345'
			],
			[
				'01',
				'+1',
				'.5',
				'1.',
				'1e',
				'-',
				'1e+',
				'1.5.2',
				'NaN',
				'Infinity',
				'1234567890123456',
				'1e100',
				'0x1',
				// no negative zero: a zero is written 0
				'-0',
				'-0.0',
				'-0.000',
				'-0e1',
				'-00'
			]
		);
		expectTexts(
			jsonSchemaGrammar({ type: 'integer' }),
			['0', '-3', '42'],
			['1.0', '1e3', '-', '-0']
		);
	});

	it('numeric bounds: minimum, maximum, exclusive, integers, negative ranges', () => {
		expectTexts(
			jsonSchemaGrammar({ type: 'number', minimum: 0, maximum: 1 }),
			['0', '1', '0.5', '1.0', '0.999', '0.000000000000001', '1.000000000000000'],
			['1.5', '2', '-0.1', '1e0', '10', '1.0001', '-1', '0.5e-1', '-0', '-0.0']
		);
		expectTexts(
			jsonSchemaGrammar({ type: 'number', exclusiveMinimum: 0, exclusiveMaximum: 1 }),
			['0.5', '0.000000000000001', '0.999999999999999'],
			['0', '1', '0.0', '1.0', '-0']
		);
		expectTexts(
			jsonSchemaGrammar({ type: 'integer', minimum: 0.5, exclusiveMaximum: 12.5 }),
			['1', '12', '7'],
			['0', '13', '-1', '1.0']
		);
		expectTexts(
			jsonSchemaGrammar({ type: 'number', minimum: 10, maximum: 20 }),
			['10', '15.5', '20', '19.999'],
			['9.99', '21', '1', '2', '200', '20.001']
		);
		expectTexts(
			jsonSchemaGrammar({ type: 'number', minimum: -5, maximum: -2 }),
			['-2', '-4.5', '-5.0'],
			['-1', '-6', '3', '-', '-5.1']
		);
		// Every prefix the recogniser takes can still end in bounds: no dead ends.
		const g = jsonSchemaGrammar({ type: 'number', minimum: 0.25, exclusiveMaximum: 0.75 });
		const walk = (stacks: ReturnType<Grammar['start']>, depth: number): void => {
			let any = g.acceptsEnd(stacks);
			for (const c of '-0123456789.') {
				const next = g.step(stacks, c.charCodeAt(0));
				if (next.length) {
					any = true;
					if (depth > 1) walk(next, depth - 1);
				}
			}
			expect(any).toBe(true);
		};
		walk(g.start(), 5);
	});

	it('objects: order, optional keys, free keys, additionalProperties as a schema', () => {
		const schema = {
			type: 'object',
			properties: { a: { type: 'integer' }, b: { type: 'string' }, c: { type: 'boolean' } },
			required: ['b']
		};
		expectTexts(
			jsonSchemaGrammar(schema),
			[
				'{"b": "x"}',
				'{"a": 1, "b": "x"}',
				'{"b": "x", "c": true}',
				'{"a": 1, "b": "", "c": false}'
			],
			[
				'{}',
				'{"a": 1}',
				'{"c": true, "b": "x"}',
				'{"b": "x",}',
				'{"b": "x" "c": true}',
				'{"d": 1, "b": "x"}'
			]
		);
		expectTexts(
			jsonSchemaGrammar({ type: 'object', additionalProperties: { type: 'integer' } }),
			['{}', '{"x": 1}', '{"x": 1, "日本": -2, "x": 3}'],
			['{"x": "1"}', '{x: 1}', '[]']
		);
		expectTexts(
			jsonSchemaGrammar({ type: 'object', additionalProperties: false }),
			['{}'],
			['{"a": 1}']
		);
		expectTexts(
			jsonObjectGrammar(),
			['{}', '{"a": [1, {"b": null}], "c": "d", "e": {"f": [true, false, 1.5]}}'],
			['[]', '1', '"x"', '{"a": 1,}']
		);
	});

	it('arrays: items, minItems, maxItems, nesting', () => {
		expectTexts(
			jsonSchemaGrammar({ type: 'array', items: { type: 'integer' }, minItems: 1, maxItems: 3 }),
			['[1]', '[1, 2, 3]', '[ 1 ,2 ]'],
			['[]', '[1, 2, 3, 4]', '[1,]', '[,1]', '["1"]']
		);
		expectTexts(
			jsonSchemaGrammar({
				type: 'array',
				items: { type: 'array', items: { type: 'array', items: { type: 'null' } } }
			}),
			['[]', '[[]]', '[[[null], []], [[null, null]]]'],
			['[[[1]]]', '[[null]]']
		);
	});

	it('enum, const, type lists, anyOf, allOf of one', () => {
		expectTexts(
			jsonSchemaGrammar({ enum: ['a', 'é', 1, 12, null, true, { x: [1] }] }),
			['"a"', '"é"', '1', '12', 'null', 'true', '{"x":[1]}'],
			['"b"', '2', '123', 'false', '{"x": [1]}', '"\\u00e9"']
		);
		// enum values the rest of the schema refuses are dropped.
		expectTexts(
			jsonSchemaGrammar({ type: 'string', enum: ['ab', 'abc', 1], maxLength: 2 }),
			['"ab"'],
			['"abc"', '1']
		);
		expectTexts(jsonSchemaGrammar({ const: 'x' }), ['"x"'], ['"y"']);
		expectTexts(jsonSchemaGrammar({ type: ['string', 'null'] }), ['"s"', 'null'], ['1']);
		expectTexts(
			jsonSchemaGrammar({
				anyOf: [
					{ type: 'integer' },
					{ type: 'array', items: { type: 'string' } },
					{ type: 'object', properties: { k: { type: 'number' } }, required: ['k'] }
				]
			}),
			['3', '["a"]', '{"k": 1.5}', '[]'],
			['1.5', '[1]', '{}', 'null']
		);
		expectTexts(
			jsonSchemaGrammar({ allOf: [{ type: 'boolean' }], description: 'd' }),
			['true'],
			['1']
		);
		// anyOf whose branches share a prefix: the recogniser follows both.
		expectTexts(
			jsonSchemaGrammar({
				anyOf: [
					{ type: 'object', properties: { a: { type: 'integer' } }, required: ['a'] },
					{ type: 'object', properties: { a: { type: 'string' } }, required: ['a'] }
				]
			}),
			['{"a": 1}', '{"a": "1"}'],
			['{"a": null}']
		);
	});

	it('$ref: $defs, definitions, recursion, the root', () => {
		const tree = {
			$defs: {
				node: {
					type: 'object',
					properties: {
						v: { type: 'integer' },
						kids: { type: 'array', items: { $ref: '#/$defs/node' } }
					},
					required: ['v']
				}
			},
			$ref: '#/$defs/node'
		};
		expectTexts(
			jsonSchemaGrammar(tree),
			['{"v": 1}', '{"v": 1, "kids": [{"v": 2, "kids": [{"v": 3}]}, {"v": 4}]}'],
			['{"kids": []}', '{"v": 1, "kids": [{}]}']
		);
		const list = {
			type: 'object',
			properties: { next: { anyOf: [{ $ref: '#' }, { type: 'null' }] } },
			required: ['next']
		};
		expectTexts(
			jsonSchemaGrammar(list),
			['{"next": null}', '{"next": {"next": {"next": null}}}'],
			['{"next": {}}']
		);
		expectTexts(
			jsonSchemaGrammar({ definitions: { a: { type: 'null' } }, $ref: '#/definitions/a' }),
			['null'],
			['1']
		);
	});

	it('whitespace: compact by default, pretty-printed when asked, bounded (no blank lines, no runs of spaces)', () => {
		const schema = { type: 'array', items: { type: 'integer' } };
		expectTexts(
			jsonSchemaGrammar(schema),
			['[1,2]', '[1, 2]', '[ 1 , 2 ]'],
			['[\n  1,\n  2\n]', '[\n1]', '[  1]', '[1 ,  2]', '[\t1]']
		);
		const g = jsonSchemaGrammar(schema, { maxIndent: PRETTY_MAX_INDENT });
		expectTexts(
			g,
			['[1,2]', '[1, 2]', '[ 1 , 2 ]', '[\n  1,\n  2\n]', '[\n\t\t1\n]', `[\n${' '.repeat(16)}1]`],
			['[  1]', '[\n\n1]', '[ \n1]', `[\n${' '.repeat(17)}1]`, '[\r\n1]', '[1 ,  2]']
		);
		// A walk of spaces and newlines cannot go on: every gap ends within 18 bytes.
		let stacks = g.step(g.start(), 0x5b);
		let n = 0;
		for (;;) {
			const next = [0x20, 0x0a, 0x09].map((b) => g.step(stacks, b)).find((s) => s.length);
			if (!next) break;
			stacks = next;
			n++;
		}
		expect(n).toBeLessThanOrEqual(17);
	});

	it('random walks end in JSON that parses and validates', () => {
		const rng = new Rng(7);
		const schemas = [
			RULER_SCHEMA,
			RULER_PYDANTIC_SCHEMA,
			KITCHEN_SCHEMA,
			{
				type: 'array',
				items: {
					anyOf: [
						{ type: 'number' },
						{ type: 'object', additionalProperties: { type: 'string', maxLength: 2 } }
					]
				},
				maxItems: 4
			},
			{
				type: 'array',
				items: {
					anyOf: [
						{ type: 'number', minimum: -1.5, exclusiveMaximum: 2 },
						{ type: 'integer', exclusiveMinimum: 100, maximum: 250 }
					]
				},
				maxItems: 6
			}
		];
		for (const schema of schemas) {
			const g = jsonSchemaGrammar(schema);
			for (let k = 0; k < 25; k++) {
				const bytes = randomText(g, rng);
				expect(bytes).not.toBeNull();
				const text = new TextDecoder('utf-8', { fatal: true }).decode(bytes!);
				const value = JSON.parse(text);
				expect(schemaErrors(schema, value), text).toEqual([]);
			}
		}
		const any = jsonObjectGrammar();
		for (let k = 0; k < 25; k++) {
			const text = new TextDecoder('utf-8', { fatal: true }).decode(randomText(any, rng)!);
			expect(typeof JSON.parse(text)).toBe('object');
		}
	});

	it('tuples: prefixItems position by position, then items (or nothing with items: false)', () => {
		const ids = ['1', '2', '3'];
		expectTexts(
			jsonSchemaGrammar({
				type: 'array',
				prefixItems: ids.map((id) => ({
					type: 'object',
					properties: { id: { const: id }, score: { type: 'number', minimum: 0, maximum: 1 } },
					required: ['id', 'score'],
					additionalProperties: false
				})),
				items: false
			}),
			[
				'[{"id":"1","score":0.5},{"id":"2","score":1},{"id":"3","score":0}]',
				'[{"id": "1", "score": 0}]',
				'[]'
			],
			[
				'[{"id":"1","score":0.5},{"id":"1","score":1}]', // a position's own id only
				'[{"id":"2","score":0.5}]',
				'[{"id":"1","score":0},{"id":"2","score":0},{"id":"3","score":0},{"id":"3","score":0}]',
				'[{"id":"1","score":2}]'
			]
		);
		const open = jsonSchemaGrammar({
			type: 'array',
			prefixItems: [{ type: 'string' }, { type: 'integer' }],
			items: { type: 'boolean' },
			minItems: 2
		});
		expectTexts(open, ['["a",1]', '["a",1,true,false]'], ['["a"]', '[1,"a"]', '["a",1,2]']);
		// every random text of a tuple validates, position by position
		const rng = new Rng(5);
		const tuple = {
			type: 'array',
			prefixItems: [{ enum: ['x'] }, { type: 'integer' }],
			items: false,
			minItems: 2
		};
		for (let k = 0; k < 20; k++) {
			const text = new TextDecoder().decode(randomText(jsonSchemaGrammar(tuple), rng)!);
			const value = JSON.parse(text) as unknown[];
			expect(value).toHaveLength(2);
			expect(value[0]).toBe('x');
			expect(Number.isInteger(value[1])).toBe(true);
		}
	});

	it('refuses unsupported keywords, naming them and where they are', () => {
		const cases: [unknown, string | null, string][] = [
			[{ type: 'string', pattern: '^a' }, 'pattern', '#'],
			[{ type: 'string', format: 'date-time' }, 'format', '#'],
			[{ type: 'number', multipleOf: 2 }, 'multipleOf', '#'],
			[{ type: 'string', minimum: 1 }, 'minimum', '#'],
			[{ type: 'number', exclusiveMinimum: true }, 'exclusiveMinimum', '#'],
			[{ type: 'integer', minimum: 1.5, maximum: 1.9 }, 'minimum', '#'],
			[{ type: 'number', exclusiveMinimum: 1, maximum: 1 }, 'exclusiveMinimum', '#'],
			[
				{ type: 'object', properties: { a: { type: 'integer', format: 'int32' } } },
				'format',
				'#/properties/a'
			],
			[{ oneOf: [{ type: 'string' }] }, 'oneOf', '#'],
			[{ type: 'array', prefixItems: { type: 'null' } }, 'prefixItems', '#'],
			[
				{ type: 'array', prefixItems: [{ type: 'null' }], items: false, minItems: 2 },
				'minItems',
				'#'
			],
			[{ type: 'array', items: { not: { type: 'null' } } }, 'not', '#/items'],
			[{ type: 'array', items: [{ type: 'null' }] }, 'items', '#'],
			[{ type: 'object', patternProperties: {} }, 'patternProperties', '#'],
			[{ type: 'string', nullable: true }, 'nullable', '#'],
			[{ type: 'string', maxItems: 3 }, 'maxItems', '#'],
			[{ type: 'date' }, 'type', '#'],
			[{ type: 'object', properties: { a: {} }, required: ['b'] }, 'required', '#'],
			[{ $ref: 'https://example.com/s.json' }, '$ref', '#/$ref'],
			[{ $ref: '#/$defs/missing' }, '$ref', '#/$ref'],
			[{ anyOf: [{ $ref: '#' }, { type: 'null' }] }, '$ref', '#'],
			[{ enum: [] }, 'enum', '#'],
			[{ type: 'string', enum: [1] }, 'enum', '#'],
			[{ allOf: [{ type: 'string' }, { maxLength: 2 }] }, 'allOf', '#'],
			[{ anyOf: [{ type: 'string' }], type: 'string' }, 'type', '#'],
			[{ type: 'string', minLength: 3, maxLength: 2 }, 'minLength', '#'],
			[false, null, '#']
		];
		for (const [schema, keyword, path] of cases) {
			let error: unknown;
			try {
				jsonSchemaGrammar(schema);
			} catch (e) {
				error = e;
			}
			expect(error, JSON.stringify(schema)).toBeInstanceOf(SchemaError);
			expect((error as SchemaError).keyword, JSON.stringify(schema)).toBe(keyword);
			expect((error as SchemaError).path, JSON.stringify(schema)).toBe(path);
			if (keyword) expect((error as Error).message).toContain(`'${keyword}'`);
		}
	});
});
