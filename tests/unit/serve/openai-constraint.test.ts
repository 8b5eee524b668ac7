/**
 * constraint.ts without a GPU: the grammar of a request (tool calls in the chat template's
 * format, a named function, one call when parallel_tool_calls is false, JSON or tool calls
 * under 'auto'), walked with Qwen3's real tokens (its `<tool_call>` added token included),
 * the per-shape cache, and the 400s: a schema keyword the compiler refuses (param: where
 * the schema is), a tokenizer that is not byte-level.
 */
import { describe, expect, it } from 'vitest';
import { isConstrained, requestGrammar, RequestGrammars } from '../../../src/lib/serve/constraint';
import { OpenAIApiError } from '../../../src/lib/serve/errors';
import { parseChatCompletionRequest } from '../../../src/lib/serve/request';
import { TokenGrammar } from '../../../src/lib/model/constrain/token-mask';
import { vocabularyOf } from '../../../src/lib/model/constrain/vocabulary';
import { qwen3Tokenizer } from '../../helpers/qwen3-tokenizer';

const USER = [{ role: 'user', content: 'hi' }];
const WEATHER = {
	type: 'function',
	function: {
		name: 'get_weather',
		parameters: {
			type: 'object',
			properties: { city: { type: 'string' }, days: { type: 'integer', minimum: 1 } },
			required: ['city']
		}
	}
};
const CLOCK = { type: 'function', function: { name: 'get_time' } };
const SCHEMA = { type: 'object', properties: { a: { type: 'boolean' } }, required: ['a'] };

const request = (extra: Record<string, unknown>) =>
	parseChatCompletionRequest({ model: 'm', messages: USER, ...extra });

function errorOf(f: () => unknown): OpenAIApiError {
	try {
		f();
	} catch (e) {
		if (e instanceof OpenAIApiError) return e;
		throw e;
	}
	throw new Error('no error');
}

describe('request grammars', () => {
	it('which requests are constrained', () => {
		expect(isConstrained(request({}))).toBe(false);
		expect(isConstrained(request({ tools: [WEATHER] }))).toBe(false);
		expect(isConstrained(request({ tools: [WEATHER], tool_choice: 'required' }))).toBe(true);
		expect(isConstrained(request({ response_format: { type: 'json_object' } }))).toBe(true);
		expect(requestGrammar(request({ response_format: { type: 'text' } }))).toBeNull();
	});

	it("tool_choice: the template's <tool_call> blocks, arguments of the schema", () => {
		const call = (name: string, args: string) =>
			`<tool_call>\n{"name": "${name}", "arguments": ${args}}\n</tool_call>`;
		const required = requestGrammar(request({ tools: [WEATHER, CLOCK], tool_choice: 'required' }))!;
		for (const text of [
			call('get_weather', '{"city": "Paris"}'),
			call('get_weather', '{"city": "Paris", "days": 3}'),
			call('get_time', '{}'),
			`${call('get_time', '{}')}\n${call('get_weather', '{"city": "x"}')}`
		])
			expect(required.accepts(text), text).toBe(true);
		for (const text of [
			'',
			'Sure. ' + call('get_time', '{}'),
			call('get_weather', '{}'),
			call('get_weather', '{"city": "Paris", "days": 0}'),
			call('get_time', '{"x": 1}'),
			call('get_other', '{}'),
			`${call('get_time', '{}')}\n`
		])
			expect(required.accepts(text), text).toBe(false);
		const named = requestGrammar(
			request({
				tools: [WEATHER, CLOCK],
				tool_choice: { type: 'function', function: { name: 'get_time' } }
			})
		)!;
		expect(named.accepts(call('get_time', '{}'))).toBe(true);
		expect(named.accepts(call('get_weather', '{"city": "Paris"}'))).toBe(false);
		const single = requestGrammar(
			request({ tools: [CLOCK], tool_choice: 'required', parallel_tool_calls: false })
		)!;
		expect(single.accepts(call('get_time', '{}'))).toBe(true);
		expect(single.accepts(`${call('get_time', '{}')}\n${call('get_time', '{}')}`)).toBe(false);
		// A json format with tools under 'auto': the JSON or the calls.
		const either = requestGrammar(
			request({
				tools: [CLOCK],
				response_format: { type: 'json_schema', json_schema: { name: 's', schema: SCHEMA } }
			})
		)!;
		expect(either.accepts('{"a": true}')).toBe(true);
		expect(either.accepts(call('get_time', '{}'))).toBe(true);
		expect(either.accepts('{"a": 1}')).toBe(false);
	});

	it("Qwen3's tokens: the <tool_call> added token is allowed where the block opens", () => {
		const q = qwen3Tokenizer();
		const tg = new TokenGrammar(
			requestGrammar(request({ tools: [WEATHER], tool_choice: 'required' }))!,
			vocabularyOf(q)
		);
		const text =
			'<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
		const ids = [...q.encode(text), q.eosTokenIds[0]];
		expect(ids[0]).toBe(q.tokenToId('<tool_call>'));
		const c = tg.start();
		for (const id of ids) {
			const mask = new Uint32Array(tg.vocab.words);
			c.fillMask(mask, q.eosTokenIds);
			expect((mask[id >>> 5] >>> (id & 31)) & 1, `${id} after ${JSON.stringify(c.text)}`).toBe(1);
			c.accept(id);
		}
		expect(c.done).toBe(true);
	});

	it('RequestGrammars: one TokenGrammar per request shape; 400s for schemas and tokenizers', () => {
		const grammars = new RequestGrammars(qwen3Tokenizer());
		const body = {
			response_format: { type: 'json_schema', json_schema: { name: 's', schema: SCHEMA } }
		};
		const r = request(body);
		const a = grammars.get(r);
		expect(a).toBeInstanceOf(TokenGrammar);
		expect(grammars.get(request(structuredClone(body)))).toBe(a);
		expect(grammars.get(request({}))).toBeNull();

		const bad = errorOf(() =>
			grammars.get(
				request({
					response_format: {
						type: 'json_schema',
						json_schema: {
							name: 's',
							schema: { type: 'object', properties: { d: { type: 'string', pattern: 'x' } } }
						}
					}
				})
			)
		);
		expect(bad.toBody().error).toMatchObject({
			type: 'invalid_request_error',
			param: 'response_format.json_schema.schema',
			code: 'unsupported_schema_keyword'
		});
		expect(bad.message).toContain("'pattern' at #/properties/d");
		const badTool = errorOf(() =>
			grammars.get(
				request({
					tools: [CLOCK, { type: 'function', function: { name: 'f', parameters: { oneOf: [] } } }],
					tool_choice: 'required'
				})
			)
		);
		expect([badTool.status, badTool.param]).toEqual([400, 'tools[1].function.parameters']);

		const notByteLevel = new RequestGrammars({
			vocabSize: 2,
			idToToken: () => 'a',
			tokenToId: () => undefined,
			isSpecial: () => false
		});
		const e = errorOf(() => notByteLevel.get(r));
		expect([e.status, e.param, e.code]).toEqual([400, 'response_format', 'unsupported_value']);
		expect(e.message).toContain('not byte-level');
		const noVocabulary = errorOf(() =>
			new RequestGrammars({}).get(request({ tools: [CLOCK], tool_choice: 'required' }))
		);
		expect([noVocabulary.status, noVocabulary.param]).toEqual([400, 'tool_choice']);
	});
});
