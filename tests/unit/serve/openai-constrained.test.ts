/**
 * Constrained decoding through openaiClient() on the REAL engine (tiny random Llama,
 * SwiftShader): a random model returns JSON valid against the request's schema (several
 * seeds), well-formed tool calls under 'required' or a named function, any object for
 * json_object; a reply cut by max_tokens ends 'length' with a valid JSON prefix; token
 * records say constrained; unsupported keywords are a 400 naming them.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openaiClient } from '../../../src/lib/serve/client';
import type { TabrlChatCompletion } from '../../../src/lib/serve/response';
import { jsonSchemaGrammar } from '../../../src/lib/model/constrain/json-schema';
import { useGpu } from '../../helpers/gpu';
import { KITCHEN_SCHEMA, RULER_SCHEMA, schemaErrors } from '../model/constrain/json-schema-check';
import { ChatService } from '../../../src/lib/serve/service';
import { Generator } from '../../../src/lib/model/generate/generator';
import { MODEL_NAME, tinyChat, type TinyChat } from './openai-setup';

const USER = [{ role: 'user' as const, content: 'rate the games' }];
const tabrl = (c: unknown) => c as TabrlChatCompletion;

const WEATHER = {
	type: 'function' as const,
	function: {
		name: 'get_weather',
		parameters: {
			type: 'object',
			properties: { city: { type: 'string', maxLength: 4 }, days: { type: 'integer' } },
			required: ['city'],
			additionalProperties: false
		}
	}
};
const CLOCK = {
	type: 'function' as const,
	function: { name: 'get_time' }
};

describe('constrained decoding through openaiClient', () => {
	const gpu = useGpu();
	let chat: TinyChat;
	let client: OpenAI;
	/** A longer context for the tool calls (the tools' JSON in the prompt is ~300 tiny tokens). */
	let longGen: Generator;
	let longClient: OpenAI;

	beforeAll(async () => {
		chat = await tinyChat(gpu());
		client = openaiClient({ service: chat.service });
		longGen = new Generator(chat.model, { maxContext: 1024 });
		const service = new ChatService({
			engine: longGen,
			tokenizer: chat.tokenizer,
			model: MODEL_NAME,
			scheduler: { stopTokenIds: chat.config.eosTokenIds }
		});
		longClient = openaiClient({ service });
	});
	afterAll(async () => {
		longGen?.release();
		await chat?.release();
	});

	it('json_schema: every choice parses and validates (4 seeds in one request)', async () => {
		const r = tabrl(
			await client.chat.completions.create({
				model: MODEL_NAME,
				messages: USER,
				n: 4,
				seed: 1,
				max_tokens: 400,
				response_format: {
					type: 'json_schema',
					json_schema: { name: 'kitchen', schema: KITCHEN_SCHEMA, strict: true }
				}
			})
		);
		const eos = new Set(chat.config.eosTokenIds);
		for (const c of r.choices) {
			expect(c.finish_reason, c.message.content ?? '').toBe('stop');
			const value = JSON.parse(c.message.content!);
			expect(schemaErrors(KITCHEN_SCHEMA, value), c.message.content!).toEqual([]);
			expect(c.tabrl.constrained).toBe(true);
			expect(eos.has(c.tabrl.ids.at(-1)!)).toBe(true);
			expect(c.tabrl.logprobs.every((l) => Number.isFinite(l) && l <= 0)).toBe(true);
		}
		expect(new Set(r.choices.map((c) => c.message.content)).size).toBeGreaterThan(1);
	});

	it('the RULER schema, streamed: a reply cut by max_tokens ends length, a prefix of valid JSON', async () => {
		const stream = await client.chat.completions.create({
			model: MODEL_NAME,
			messages: USER,
			seed: 2,
			max_tokens: 12,
			stream: true,
			response_format: {
				type: 'json_schema',
				json_schema: { name: 'ruler', schema: RULER_SCHEMA, strict: true }
			}
		});
		let text = '';
		let finish: string | null = null;
		for await (const chunk of stream)
			for (const c of chunk.choices) {
				text += c.delta.content ?? '';
				finish = c.finish_reason ?? finish;
			}
		const g = jsonSchemaGrammar(RULER_SCHEMA);
		expect(text.startsWith('{')).toBe(true);
		if (finish === 'length')
			expect(g.advance(g.start(), new TextEncoder().encode(text)).length).toBeGreaterThan(0);
		else expect(schemaErrors(RULER_SCHEMA, JSON.parse(text))).toEqual([]);
	});

	it("tool_choice 'required': one well-formed call whose arguments match the parameters", async () => {
		const r = tabrl(
			await longClient.chat.completions.create({
				model: MODEL_NAME,
				messages: USER,
				n: 2,
				seed: 3,
				tools: [WEATHER, CLOCK],
				tool_choice: 'required',
				parallel_tool_calls: false
			})
		);
		for (const c of r.choices) {
			expect(c.finish_reason, c.message.content ?? '').toBe('tool_calls');
			expect(c.message.content).toBeNull();
			expect(c.message.tool_calls).toHaveLength(1);
			const call = c.message.tool_calls![0];
			if (call.type !== 'function') throw new Error('not a function call');
			expect(['get_weather', 'get_time']).toContain(call.function.name);
			const args = JSON.parse(call.function.arguments);
			const schema =
				call.function.name === 'get_weather'
					? WEATHER.function.parameters
					: { type: 'object', additionalProperties: false };
			expect(schemaErrors(schema, args), call.function.arguments).toEqual([]);
		}
		// A named function: that one, whatever the model prefers.
		const named = tabrl(
			await longClient.chat.completions.create({
				model: MODEL_NAME,
				messages: USER,
				seed: 4,
				tools: [WEATHER, CLOCK],
				tool_choice: { type: 'function', function: { name: 'get_time' } },
				parallel_tool_calls: false
			})
		);
		const [c] = named.choices;
		expect(c.finish_reason).toBe('tool_calls');
		const call = c.message.tool_calls![0];
		expect(call.type === 'function' && [call.function.name, call.function.arguments]).toEqual([
			'get_time',
			'{}'
		]);
	});

	it('json_object: any JSON object', async () => {
		const r = await client.chat.completions.create({
			model: MODEL_NAME,
			messages: USER,
			seed: 5,
			max_tokens: 300,
			response_format: { type: 'json_object' }
		});
		const [c] = r.choices;
		const text = c.message.content!;
		expect(text.startsWith('{')).toBe(true);
		if (c.finish_reason === 'stop') {
			const value = JSON.parse(text);
			expect(typeof value === 'object' && !Array.isArray(value)).toBe(true);
		} else expect(c.finish_reason).toBe('length');
	});

	it('an unsupported schema keyword is a 400 naming it; nothing is decoded', async () => {
		const calls = chat.service.scheduler.callSizes.length;
		const error = await client.chat.completions
			.create({
				model: MODEL_NAME,
				messages: USER,
				response_format: {
					type: 'json_schema',
					json_schema: {
						name: 'bad',
						schema: {
							type: 'object',
							properties: { when: { type: 'string', format: 'date-time' } }
						}
					}
				}
			})
			.catch((e: unknown) => e);
		expect(error).toBeInstanceOf(OpenAI.BadRequestError);
		const e = error as InstanceType<typeof OpenAI.BadRequestError>;
		expect(e.param).toBe('response_format.json_schema.schema');
		expect(e.code).toBe('unsupported_schema_keyword');
		expect(e.message).toContain("'format'");
		expect(e.message).toContain('#/properties/when');
		const toolError = await client.chat.completions
			.create({
				model: MODEL_NAME,
				messages: USER,
				tools: [
					{
						type: 'function',
						function: {
							name: 'f',
							parameters: { type: 'object', properties: { n: { type: 'number', multipleOf: 2 } } }
						}
					}
				],
				tool_choice: 'required'
			})
			.catch((e: unknown) => e);
		expect((toolError as { param?: string }).param).toBe('tools[0].function.parameters');
		expect(chat.service.scheduler.callSizes.length).toBe(calls);
	});
});
