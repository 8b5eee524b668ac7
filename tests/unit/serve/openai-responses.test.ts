/**
 * `POST /v1/responses` on the HTTP server over loopback, through the official client's
 * `responses.create`, on the REAL engine (tiny random Llama): text whole and streamed (events
 * in OpenAI's order), a function tool forced by tool_choice as a `function_call` item, the
 * call and its output sent back as input, and server-state or built-in-tool fields refused.
 */
import OpenAI from 'openai';
import type {
	ResponseFunctionToolCall,
	ResponseOutputMessage,
	ResponseStreamEvent
} from 'openai/resources/responses/responses';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listenChatServer, type ChatHttpServer } from '../../../src/lib/serve/node/http-server';
import type { TabrlResponse } from '../../../src/lib/serve/responses-output';
import { ChatService } from '../../../src/lib/serve/service';
import { Generator } from '../../../src/lib/model/generate/generator';
import { useGpu } from '../../helpers/gpu';
import { MODEL_NAME, tinyChat, type TinyChat } from './openai-setup';

/** A tool with no parameters: its call is short ({} arguments), so few decode steps. */
const CLOCK = { type: 'function' as const, name: 'now', parameters: null, strict: false };

async function collect(stream: AsyncIterable<ResponseStreamEvent>): Promise<ResponseStreamEvent[]> {
	const events: ResponseStreamEvent[] = [];
	for await (const e of stream) events.push(e);
	return events;
}

describe('POST /v1/responses through the openai client', () => {
	const gpu = useGpu();
	let chat: TinyChat;
	let generator: Generator;
	let http: ChatHttpServer;
	let client: OpenAI;

	beforeAll(async () => {
		chat = await tinyChat(gpu());
		// a longer context than the shared one: a tool's schema in the prompt is ~150 tokens
		generator = new Generator(chat.model, { maxContext: 1024 });
		const service = new ChatService({
			engine: generator,
			tokenizer: chat.tokenizer,
			model: MODEL_NAME,
			scheduler: { stopTokenIds: chat.config.eosTokenIds }
		});
		http = await listenChatServer(service, { port: 0 });
		client = new OpenAI({ baseURL: `${http.url}/v1`, apiKey: 'unused', maxRetries: 0 });
	});
	afterAll(async () => {
		await http?.close();
		generator?.release();
		await chat?.release();
	});

	it('text: a response object, and the same words streamed as OpenAI orders the events', async () => {
		const body = {
			model: MODEL_NAME,
			instructions: 'Answer briefly.',
			input: 'hello there',
			max_output_tokens: 3,
			temperature: 0
		};
		const whole = (await client.responses.create(body)) as TabrlResponse;
		expect(whole).toMatchObject({
			object: 'response',
			model: MODEL_NAME,
			instructions: 'Answer briefly.',
			error: null
		});
		expect(whole.id).toMatch(/^resp_/);
		expect(['completed', 'incomplete']).toContain(whole.status);
		expect(whole.output).toHaveLength(1);
		const message = whole.output[0] as ResponseOutputMessage;
		expect(message).toMatchObject({ type: 'message', role: 'assistant' });
		expect(message.content).toHaveLength(1);
		expect(message.content[0].type).toBe('output_text');
		expect(whole.output_text).toBe(
			message.content[0].type === 'output_text' ? message.content[0].text : ''
		);
		const ids = whole.tabrl!.ids;
		expect(whole.usage).toMatchObject({
			input_tokens: whole.tabrl!.prompt_ids.length,
			output_tokens: ids.length,
			total_tokens: whole.tabrl!.prompt_ids.length + ids.length
		});
		if (ids.length === 3 && !chat.config.eosTokenIds.includes(ids[2]))
			expect(whole.incomplete_details).toEqual({ reason: 'max_output_tokens' });

		const events = await collect(await client.responses.create({ ...body, stream: true }));
		expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
		const types = events.map((e) => e.type);
		const text = events.flatMap((e) => (e.type === 'response.output_text.delta' ? [e.delta] : []));
		expect(types).toEqual([
			'response.created',
			'response.in_progress',
			'response.output_item.added',
			'response.content_part.added',
			...text.map(() => 'response.output_text.delta'),
			'response.output_text.done',
			'response.content_part.done',
			'response.output_item.done',
			whole.status === 'incomplete' ? 'response.incomplete' : 'response.completed'
		]);
		expect(text.join('')).toBe(whole.output_text);
		const last = events.at(-1)! as { response: TabrlResponse };
		expect(last.response.output).toEqual(
			whole.output.map((o) => ({ ...o, id: expect.stringMatching(/^msg_/) }))
		);
		expect(last.response.tabrl!.ids).toEqual(ids);
	});

	it('a function tool under a named tool_choice: a function_call item, whole and streamed', async () => {
		const body = {
			model: MODEL_NAME,
			input: [{ role: 'user' as const, content: 'what time is it?' }],
			tools: [CLOCK],
			tool_choice: { type: 'function' as const, name: 'now' },
			parallel_tool_calls: false
		};
		const whole = await client.responses.create(body);
		expect(whole.status).toBe('completed');
		expect(whole.output).toHaveLength(1);
		const call = whole.output[0] as ResponseFunctionToolCall;
		expect(call).toMatchObject({
			type: 'function_call',
			name: 'now',
			arguments: '{}',
			status: 'completed'
		});
		expect(call.call_id).toMatch(/^call_/);

		const events = await collect(await client.responses.create({ ...body, stream: true }));
		expect(events.map((e) => e.type)).toEqual([
			'response.created',
			'response.in_progress',
			'response.output_item.added',
			'response.function_call_arguments.delta',
			'response.function_call_arguments.done',
			'response.output_item.done',
			'response.completed'
		]);
		const done = events[4];
		expect(
			done.type === 'response.function_call_arguments.done' && [done.name, done.arguments]
		).toEqual(['now', '{}']);

		// the call and its result sent back as input items: read as the assistant's tool call
		// and the tool's answer (a short free reply follows); the call sent whole or, as the AI
		// SDK does with store on, by reference to the item this server made: the same prompt
		const followUp = (callItem: Record<string, unknown>) =>
			client.responses.create({
				model: MODEL_NAME,
				input: [
					...body.input,
					callItem,
					{ type: 'function_call_output', call_id: call.call_id, output: '12:00' }
				] as never,
				tools: [CLOCK],
				max_output_tokens: 1,
				temperature: 0
			}) as Promise<TabrlResponse>;
		const next = await followUp({
			type: 'function_call',
			call_id: call.call_id,
			name: call.name,
			arguments: call.arguments
		});
		expect(next.usage!.input_tokens).toBeGreaterThan(whole.usage!.input_tokens);
		expect(next.usage!.output_tokens).toBe(1);
		const byReference = await followUp({ type: 'item_reference', id: call.id });
		expect(byReference.tabrl!.prompt_ids).toEqual(next.tabrl!.prompt_ids);
	});

	it('what needs server state, built-in tools and non-text input: a 400 naming the field', async () => {
		const base = { model: MODEL_NAME, input: 'hi' };
		const cases: [Record<string, unknown>, string, RegExp][] = [
			[{ previous_response_id: 'resp_1' }, 'previous_response_id', /not stored/],
			[{ store: true }, 'store', /not stored/],
			[{ background: true }, 'background', /background/],
			[{ tools: [{ type: 'web_search' }] }, 'tools[0].type', /only function tools/],
			[{ tool_choice: { type: 'web_search' } }, 'tool_choice', /tool_choice/],
			[
				{ input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'x' }] }] },
				'input[0].content[0].type',
				/text only/
			],
			[{ input: [{ type: 'reasoning', summary: [] }] }, 'input[0].type', /not supported/],
			[{ input: [{ type: 'item_reference', id: 'fc_x' }] }, 'input[0].id', /send the item itself/],
			[{ frequency: 1 }, 'frequency', /Unrecognized/],
			// found by the chat-completions validation, named as the Responses API names it
			[{ max_output_tokens: 0 }, 'max_output_tokens', /'max_output_tokens'.*minimum of 1/],
			[{ tools: [{ ...CLOCK, name: 'a b' }] }, 'tools[0].name', /function name/]
		];
		for (const [over, param, message] of cases) {
			const error = await client.responses.create({ ...base, ...over } as never).then(
				() => null,
				(e: unknown) => e
			);
			expect(error, param).toBeInstanceOf(OpenAI.BadRequestError);
			const e = error as InstanceType<typeof OpenAI.BadRequestError>;
			expect(e.param, JSON.stringify(over)).toBe(param);
			expect(e.message).toMatch(message);
		}
	});
});
