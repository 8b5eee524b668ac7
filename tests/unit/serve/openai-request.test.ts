/**
 * Request validation (request.ts), prompt building (prompt.ts) with the fixtures' real
 * tiny tokenizer and ChatML template, and the response objects (response.ts) against
 * OpenAI's schema: exact key sets, types, and the error body shape.
 */
import { describe, expect, it } from 'vitest';
import { OpenAIApiError, toApiError } from '../../../src/lib/serve/errors';
import { buildPrompt } from '../../../src/lib/serve/prompt';
import { parseChatCompletionRequest } from '../../../src/lib/serve/request';
import {
	buildChoice,
	buildChunk,
	buildCompletion,
	buildModelList,
	buildUsage,
	newCompletionMeta,
	randomId,
	toOpenAIToolCalls
} from '../../../src/lib/serve/response';
import { ChatMessagesError } from '../../../src/lib/model/errors';
import { tinyTokenizer } from '../../../src/lib/testing/tiny-tokenizer';
import { Tokenizer } from '../../../src/lib/model/tokenizer/tokenizer';

const USER = [{ role: 'user', content: 'hello' }];
const TOOLS = [
	{
		type: 'function',
		function: {
			name: 'get_weather',
			description: 'Weather in a city',
			parameters: { type: 'object', properties: { city: { type: 'string' } } }
		}
	}
];

/** The OpenAIApiError that parsing `body` throws. */
function errorOf(body: unknown): OpenAIApiError {
	try {
		parseChatCompletionRequest(body);
	} catch (error) {
		expect(error).toBeInstanceOf(OpenAIApiError);
		return error as OpenAIApiError;
	}
	throw new Error(`accepted: ${JSON.stringify(body)}`);
}

describe('parseChatCompletionRequest', () => {
	it('fills OpenAI defaults', () => {
		const r = parseChatCompletionRequest({ model: 'm', messages: USER });
		expect(r).toMatchObject({
			model: 'm',
			n: 1,
			temperature: 1,
			topP: 1,
			topK: 0,
			maxTokens: undefined,
			stop: [],
			seed: undefined,
			logprobs: false,
			stream: false,
			includeUsage: false,
			tools: undefined,
			toolChoice: 'none'
		});
		expect(r.messages).toEqual([{ role: 'user', content: 'hello' }]);
	});

	it('reads every supported option; null is absent', () => {
		const r = parseChatCompletionRequest({
			model: 'm',
			messages: USER,
			n: 3,
			temperature: 0,
			top_p: 0.5,
			top_k: 4,
			max_completion_tokens: 7,
			stop: 'X',
			seed: -5,
			logprobs: true,
			top_logprobs: 20,
			stream: true,
			stream_options: { include_usage: true },
			frequency_penalty: 0,
			presence_penalty: null,
			logit_bias: {},
			response_format: { type: 'text' },
			user: 'u',
			tools: TOOLS,
			tool_choice: { type: 'function', function: { name: 'get_weather' } },
			chat_template_kwargs: { enable_thinking: false }
		});
		expect(r).toMatchObject({
			n: 3,
			temperature: 0,
			topP: 0.5,
			topK: 4,
			maxTokens: 7,
			stop: ['X'],
			seed: -5,
			logprobs: true,
			topLogprobs: 20,
			stream: true,
			includeUsage: true,
			toolChoice: { name: 'get_weather' },
			chatTemplateKwargs: { enable_thinking: false }
		});
		expect(r.tools).toHaveLength(1);
	});

	it('reads response formats (text, json_object, json_schema) and parallel_tool_calls', () => {
		const base = { model: 'm', messages: USER };
		expect(parseChatCompletionRequest(base)).toMatchObject({
			responseFormat: { type: 'text' },
			parallelToolCalls: true
		});
		expect(
			parseChatCompletionRequest({ ...base, response_format: { type: 'json_object' } })
				.responseFormat
		).toEqual({ type: 'json_object' });
		const schema = { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] };
		expect(
			parseChatCompletionRequest({
				...base,
				response_format: {
					type: 'json_schema',
					json_schema: { name: 'answer', description: 'd', schema, strict: true }
				}
			}).responseFormat
		).toEqual({ type: 'json_schema', name: 'answer', schema, strict: true });
		// strict and schema are optional (no schema: any JSON value).
		expect(
			parseChatCompletionRequest({
				...base,
				response_format: { type: 'json_schema', json_schema: { name: 'x', strict: null } }
			}).responseFormat
		).toEqual({ type: 'json_schema', name: 'x', schema: undefined, strict: false });
		expect(
			parseChatCompletionRequest({ ...base, tools: TOOLS, parallel_tool_calls: false })
				.parallelToolCalls
		).toBe(false);
	});

	it('normalizes messages: developer -> system, text parts joined, tool arguments parsed, echoed fields dropped', () => {
		const r = parseChatCompletionRequest({
			model: 'm',
			messages: [
				{ role: 'developer', content: 'be brief' },
				{
					role: 'user',
					content: [
						{ type: 'text', text: 'a' },
						{ type: 'text', text: 'b' }
					]
				},
				{
					role: 'assistant',
					content: null,
					refusal: null,
					annotations: [],
					tool_calls: [
						{
							id: 'call_1',
							type: 'function',
							function: { name: 'get_weather', arguments: '{"city": "Paris"}' }
						}
					]
				},
				{ role: 'tool', tool_call_id: 'call_1', content: '18C' }
			],
			tools: TOOLS
		});
		expect(r.messages).toEqual([
			{ role: 'system', content: 'be brief' },
			{ role: 'user', content: 'a\nb' },
			{
				role: 'assistant',
				content: null,
				tool_calls: [
					{
						id: 'call_1',
						type: 'function',
						function: { name: 'get_weather', arguments: { city: 'Paris' } }
					}
				]
			},
			{ role: 'tool', tool_call_id: 'call_1', content: '18C' }
		]);
		expect(r.toolChoice).toBe('auto');
	});

	it("hides the tools from the template with tool_choice 'none'", () => {
		const r = parseChatCompletionRequest({
			model: 'm',
			messages: USER,
			tools: TOOLS,
			tool_choice: 'none'
		});
		expect(r.tools).toBeUndefined();
		expect(r.toolChoice).toBe('none');
	});

	const cases: [string, Record<string, unknown>, string | null, string][] = [
		['no model', { messages: USER }, 'model', 'missing_required_parameter'],
		['model not a string', { model: 3, messages: USER }, 'model', 'invalid_type'],
		['no messages', { model: 'm' }, 'messages', 'missing_required_parameter'],
		['messages not an array', { model: 'm', messages: 'hi' }, 'messages', 'invalid_type'],
		['empty messages', { model: 'm', messages: [] }, 'messages', 'empty_array'],
		['message not an object', { model: 'm', messages: [3] }, 'messages[0]', 'invalid_type'],
		[
			'unknown role',
			{ model: 'm', messages: [{ role: 'bot', content: 'x' }] },
			'messages[0].role',
			'invalid_value'
		],
		[
			'user without content',
			{ model: 'm', messages: [{ role: 'user' }] },
			'messages[0].content',
			'missing_required_parameter'
		],
		[
			'content a number',
			{ model: 'm', messages: [{ role: 'user', content: 5 }] },
			'messages[0].content',
			'invalid_type'
		],
		[
			'image part',
			{
				model: 'm',
				messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }]
			},
			'messages[0].content[0].type',
			'invalid_value'
		],
		[
			'assistant with nothing',
			{ model: 'm', messages: [...USER, { role: 'assistant', content: null }] },
			'messages[1].content',
			'missing_required_parameter'
		],
		[
			'tool call arguments not JSON',
			{
				model: 'm',
				messages: [
					...USER,
					{
						role: 'assistant',
						tool_calls: [{ id: 'a', type: 'function', function: { name: 'f', arguments: '{x' } }]
					}
				]
			},
			'messages[1].tool_calls[0].function.arguments',
			'invalid_value'
		],
		[
			'tool call without function',
			{ model: 'm', messages: [...USER, { role: 'assistant', tool_calls: [{ id: 'a' }] }] },
			'messages[1].tool_calls[0]',
			'invalid_type'
		],
		[
			'tool result with no call before it',
			{ model: 'm', messages: [...USER, { role: 'tool', tool_call_id: 'a', content: 'r' }] },
			'messages[1].role',
			'invalid_value'
		],
		[
			'tool result for another id',
			{
				model: 'm',
				messages: [
					...USER,
					{
						role: 'assistant',
						tool_calls: [{ id: 'a', type: 'function', function: { name: 'f', arguments: '{}' } }]
					},
					{ role: 'tool', tool_call_id: 'b', content: 'r' }
				]
			},
			'messages[2].tool_call_id',
			'invalid_value'
		],
		[
			'tool result without id',
			{
				model: 'm',
				messages: [
					...USER,
					{
						role: 'assistant',
						tool_calls: [{ id: 'a', type: 'function', function: { name: 'f', arguments: '{}' } }]
					},
					{ role: 'tool', content: 'r' }
				]
			},
			'messages[2].tool_call_id',
			'invalid_type'
		],
		[
			'temperature < 0',
			{ model: 'm', messages: USER, temperature: -0.1 },
			'temperature',
			'invalid_value'
		],
		[
			'temperature > 2',
			{ model: 'm', messages: USER, temperature: 2.5 },
			'temperature',
			'invalid_value'
		],
		[
			'temperature a string',
			{ model: 'm', messages: USER, temperature: '1' },
			'temperature',
			'invalid_type'
		],
		['top_p 0', { model: 'm', messages: USER, top_p: 0 }, 'top_p', 'invalid_value'],
		['top_p > 1', { model: 'm', messages: USER, top_p: 1.5 }, 'top_p', 'invalid_value'],
		['n 0', { model: 'm', messages: USER, n: 0 }, 'n', 'invalid_value'],
		['n too large', { model: 'm', messages: USER, n: 129 }, 'n', 'invalid_value'],
		['n fractional', { model: 'm', messages: USER, n: 1.5 }, 'n', 'invalid_type'],
		['max_tokens 0', { model: 'm', messages: USER, max_tokens: 0 }, 'max_tokens', 'invalid_value'],
		[
			'max_completion_tokens -1',
			{ model: 'm', messages: USER, max_completion_tokens: -1 },
			'max_completion_tokens',
			'invalid_value'
		],
		[
			'both token limits, different',
			{ model: 'm', messages: USER, max_tokens: 3, max_completion_tokens: 4 },
			'max_completion_tokens',
			'invalid_value'
		],
		[
			'five stop strings',
			{ model: 'm', messages: USER, stop: ['a', 'b', 'c', 'd', 'e'] },
			'stop',
			'invalid_value'
		],
		['empty stop string', { model: 'm', messages: USER, stop: [''] }, 'stop[0]', 'invalid_value'],
		['stop a number', { model: 'm', messages: USER, stop: 3 }, 'stop', 'invalid_type'],
		['seed fractional', { model: 'm', messages: USER, seed: 1.5 }, 'seed', 'invalid_type'],
		[
			'top_logprobs > 20',
			{ model: 'm', messages: USER, logprobs: true, top_logprobs: 21 },
			'top_logprobs',
			'invalid_value'
		],
		[
			'top_logprobs without logprobs',
			{ model: 'm', messages: USER, top_logprobs: 0 },
			'top_logprobs',
			'invalid_value'
		],
		[
			'stream_options without stream',
			{ model: 'm', messages: USER, stream_options: { include_usage: true } },
			'stream_options',
			'invalid_value'
		],
		[
			'a penalty',
			{ model: 'm', messages: USER, presence_penalty: 0.5 },
			'presence_penalty',
			'unsupported_value'
		],
		[
			'logit_bias',
			{ model: 'm', messages: USER, logit_bias: { '5': 1 } },
			'logit_bias',
			'unsupported_value'
		],
		[
			'a response format of another type',
			{ model: 'm', messages: USER, response_format: { type: 'regex', regex: 'a+' } },
			'response_format.type',
			'unsupported_value'
		],
		[
			'json_schema without json_schema',
			{ model: 'm', messages: USER, response_format: { type: 'json_schema' } },
			'response_format.json_schema',
			'missing_required_parameter'
		],
		[
			'json_schema without a name',
			{
				model: 'm',
				messages: USER,
				response_format: { type: 'json_schema', json_schema: { schema: {} } }
			},
			'response_format.json_schema.name',
			'missing_required_parameter'
		],
		[
			'json_schema with a bad name',
			{
				model: 'm',
				messages: USER,
				response_format: { type: 'json_schema', json_schema: { name: 'a b', schema: {} } }
			},
			'response_format.json_schema.name',
			'invalid_value'
		],
		[
			'json_schema whose schema is a string',
			{
				model: 'm',
				messages: USER,
				response_format: { type: 'json_schema', json_schema: { name: 'r', schema: '{}' } }
			},
			'response_format.json_schema.schema',
			'invalid_type'
		],
		[
			'json_schema with strict not a boolean',
			{
				model: 'm',
				messages: USER,
				response_format: { type: 'json_schema', json_schema: { name: 'r', strict: 'yes' } }
			},
			'response_format.json_schema.strict',
			'invalid_type'
		],
		[
			'json_schema with an unknown field',
			{
				model: 'm',
				messages: USER,
				response_format: { type: 'json_schema', json_schema: { name: 'r', schemas: {} } }
			},
			'response_format.json_schema.schemas',
			'unknown_parameter'
		],
		[
			'json_object with extra fields',
			{ model: 'm', messages: USER, response_format: { type: 'json_object', schema: {} } },
			'response_format.schema',
			'unknown_parameter'
		],
		[
			'parallel_tool_calls not a boolean',
			{ model: 'm', messages: USER, parallel_tool_calls: 'no' },
			'parallel_tool_calls',
			'invalid_type'
		],
		[
			'functions',
			{ model: 'm', messages: USER, functions: [] },
			'functions',
			'unsupported_parameter'
		],
		[
			'unknown field',
			{ model: 'm', messages: USER, temprature: 1 },
			'temprature',
			'unknown_parameter'
		],
		['tools not an array', { model: 'm', messages: USER, tools: {} }, 'tools', 'invalid_type'],
		[
			'tool without function',
			{ model: 'm', messages: USER, tools: [{ type: 'function' }] },
			'tools[0]',
			'invalid_type'
		],
		[
			'bad function name',
			{ model: 'm', messages: USER, tools: [{ type: 'function', function: { name: 'a b' } }] },
			'tools[0].function.name',
			'invalid_value'
		],
		[
			'unknown tool_choice function',
			{
				model: 'm',
				messages: USER,
				tools: TOOLS,
				tool_choice: { type: 'function', function: { name: 'nope' } }
			},
			'tool_choice',
			'invalid_value'
		],
		[
			'tool_choice required without tools',
			{ model: 'm', messages: USER, tool_choice: 'required' },
			'tool_choice',
			'invalid_value'
		],
		[
			'tool_choice nonsense',
			{ model: 'm', messages: USER, tools: TOOLS, tool_choice: 'always' },
			'tool_choice',
			'invalid_type'
		]
	];
	for (const [name, body, param, code] of cases)
		it(`400 for ${name} (param ${param}, code ${code})`, () => {
			const e = errorOf(body);
			expect(e.status).toBe(400);
			expect(e.toBody()).toEqual({
				error: { message: expect.any(String), type: 'invalid_request_error', param, code }
			});
			expect(e.message.length).toBeGreaterThan(10);
		});

	it('400 for a body that is not an object', () => {
		for (const body of [null, [], 'x', 3]) expect(errorOf(body).status).toBe(400);
	});
});

describe('toApiError', () => {
	it('maps model-layer input errors to 400 and anything else to 500', () => {
		const messages = toApiError(new ChatMessagesError('bad messages'));
		expect([messages.status, messages.param]).toEqual([400, 'messages']);
		const context = toApiError(Object.assign(new Error('too long'), { kind: 'context-length' }));
		expect([context.status, context.code]).toEqual([400, 'context_length_exceeded']);
		const bug = toApiError(new TypeError('x is undefined'));
		expect(bug.toBody().error).toEqual({
			message: 'x is undefined',
			type: 'server_error',
			param: null,
			code: null
		});
		expect(bug.status).toBe(500);
	});
});

describe('buildPrompt (tiny ChatML tokenizer)', () => {
	const tok = tinyTokenizer();
	const tokenizer = Tokenizer.fromJson(tok.tokenizerJson, tok.tokenizerConfigJson);
	const request = (body: Record<string, unknown>) =>
		parseChatCompletionRequest({ model: 'm', ...body });

	it('renders with add_generation_prompt and the tools, as encodeChat does', () => {
		const r = request({ messages: USER, tools: TOOLS });
		const p = buildPrompt(tokenizer, r, 4096);
		const text = tokenizer.decode(p.ids);
		expect(text.startsWith('<|im_start|>system\nTools:\n{"type": "function"')).toBe(true);
		expect(text.endsWith('<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n')).toBe(true);
		expect(p.maxTokens).toBe(4096 - p.ids.length);
	});

	it('renders an assistant tool call and its result through the template', () => {
		const r = request({
			messages: [
				...USER,
				{
					role: 'assistant',
					content: null,
					tool_calls: [
						{
							id: 'c1',
							type: 'function',
							function: { name: 'get_weather', arguments: '{"city":"Paris"}' }
						}
					]
				},
				{ role: 'tool', tool_call_id: 'c1', content: '18C' }
			],
			tools: TOOLS
		});
		const text = tokenizer.decode(buildPrompt(tokenizer, r, 4096).ids);
		expect(text).toContain(
			'<|im_start|>assistant\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>\n<|im_start|>tool\n18C<|im_end|>\n<|im_start|>assistant\n'
		);
	});

	it('refuses a prompt that leaves no room, or max_tokens past the context', () => {
		const ids = buildPrompt(tokenizer, request({ messages: USER }), 4096).ids;
		for (const [ctx, max] of [
			[ids.length, undefined],
			[ids.length + 4, 5]
		] as const) {
			let error: unknown;
			try {
				buildPrompt(tokenizer, request({ messages: USER, max_tokens: max }), ctx);
			} catch (e) {
				error = e;
			}
			expect(error).toBeInstanceOf(OpenAIApiError);
			expect((error as OpenAIApiError).code).toBe('context_length_exceeded');
			expect((error as OpenAIApiError).status).toBe(400);
		}
		expect(
			buildPrompt(tokenizer, request({ messages: USER, max_tokens: 4 }), ids.length + 4).maxTokens
		).toBe(4);
	});
});

describe('response objects (OpenAI schema)', () => {
	const meta = newCompletionMeta('tiny', 1_700_000_000_500);
	const tabrl = { prompt_ids: [1, 2], ids: [5, 6, 7], logprobs: [-0.5, -1, -2] };

	it('a completion has exactly OpenAI keys, plus tabrl on the choice', () => {
		const choice = buildChoice({
			index: 0,
			content: 'hi',
			toolCalls: [],
			finishReason: 'stop',
			logprobs: null,
			tabrl
		});
		const c = buildCompletion(meta, [choice], buildUsage(2, 3));
		expect(Object.keys(c).sort()).toEqual(['choices', 'created', 'id', 'model', 'object', 'usage']);
		expect(c.id).toMatch(/^chatcmpl-[A-Za-z0-9]{29}$/);
		expect(c.object).toBe('chat.completion');
		expect(c.created).toBe(1_700_000_000);
		expect(c.usage).toEqual({ prompt_tokens: 2, completion_tokens: 3, total_tokens: 5 });
		expect(Object.keys(c.choices[0]).sort()).toEqual([
			'finish_reason',
			'index',
			'logprobs',
			'message',
			'tabrl'
		]);
		expect(c.choices[0].message).toEqual({ role: 'assistant', content: 'hi', refusal: null });
		expect(c.choices[0].logprobs).toBeNull();
		expect(c.choices[0].tabrl).toEqual(tabrl);
	});

	it('tool calls get call_ ids, JSON-string arguments, and null content when alone', () => {
		const toolCalls = toOpenAIToolCalls([
			{ name: 'f', arguments: '{"a":1}' },
			{ name: 'g', arguments: '{}' }
		]);
		const choice = buildChoice({
			index: 1,
			content: '',
			toolCalls,
			finishReason: 'tool_calls',
			logprobs: [],
			tabrl
		});
		expect(choice.message.content).toBeNull();
		expect(choice.message.tool_calls).toHaveLength(2);
		for (const call of choice.message.tool_calls!) {
			expect(call.id).toMatch(/^call_[A-Za-z0-9]{24}$/);
			expect(call.type).toBe('function');
		}
		expect(new Set(toolCalls.map((c) => c.id)).size).toBe(2);
		expect(choice.logprobs).toEqual({ content: [], refusal: null });
	});

	it('ids are alphanumeric, of the length asked, and do not repeat (across pool refills)', () => {
		// 3000 x 29 characters draw ~21 pools of 4096 random bytes.
		const ids = Array.from({ length: 3000 }, () => randomId(29));
		for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9]{29}$/);
		expect(new Set(ids).size).toBe(ids.length);
		expect(randomId(0)).toBe('');
		expect(randomId(5000)).toHaveLength(5000);
		// Every character appears: the bytes are not reused or stuck.
		expect(new Set(ids.join('')).size).toBe(62);
	});

	it('a chunk and the model list', () => {
		const chunk = buildChunk(meta, [
			{ index: 0, delta: { content: 'x' }, logprobs: null, finish_reason: null }
		]);
		expect(Object.keys(chunk).sort()).toEqual([
			'choices',
			'created',
			'id',
			'model',
			'object',
			'usage'
		]);
		expect(chunk.object).toBe('chat.completion.chunk');
		expect(chunk.usage).toBeNull();
		expect(buildModelList('tiny', 5)).toEqual({
			object: 'list',
			data: [{ id: 'tiny', object: 'model', created: 5, owned_by: 'tabrl' }]
		});
	});
});
