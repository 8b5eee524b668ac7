/**
 * openaiClient() served in process by the REAL engine on a tiny random Llama, few tokens
 * each. A random model cannot call a tool on purpose, so the round trip is tested in halves:
 * tool_calls and results through validation and the template into the engine's prompt
 * (token for token against encodeChat), and the <tool_call> parser on text elsewhere.
 */
import OpenAI from 'openai';
import type { ChatCompletionChunk } from 'openai/resources/chat/completions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_BASE_URL, localFetch, openaiClient } from '../../../src/lib/serve/client';
import type { TabrlChatCompletion, TabrlChoiceTokens } from '../../../src/lib/serve/response';
import { useGpu } from '../../helpers/gpu';
import { CONTEXT, MODEL_NAME, tinyChat, type TinyChat } from './openai-setup';

const USER = [{ role: 'user' as const, content: 'hello there' }];
const TOOLS = [
	{
		type: 'function' as const,
		function: {
			name: 'get_weather',
			description: 'Weather in a city',
			parameters: { type: 'object', properties: { city: { type: 'string' } } }
		}
	}
];

/** The completion as TabRL types it (the extra `tabrl` field on each choice). */
const tabrl = (c: unknown) => c as TabrlChatCompletion;

/** What a streamed answer adds up to, per choice. */
interface Summed {
	content: string;
	finish: string | null;
	logprobs: number[];
	tokens?: TabrlChoiceTokens;
	roles: string[];
}

async function sumStream(stream: AsyncIterable<ChatCompletionChunk>) {
	const choices = new Map<number, Summed>();
	let usage: ChatCompletionChunk['usage'] = null;
	const ids = new Set<string>();
	for await (const chunk of stream) {
		expect(chunk.object).toBe('chat.completion.chunk');
		expect(chunk.model).toBe(MODEL_NAME);
		ids.add(chunk.id);
		if (chunk.usage) usage = chunk.usage;
		for (const c of chunk.choices) {
			const s = choices.get(c.index) ?? { content: '', finish: null, logprobs: [], roles: [] };
			choices.set(c.index, s);
			expect(s.finish, 'nothing after finish_reason').toBeNull();
			if (c.delta.role) s.roles.push(c.delta.role);
			s.content += c.delta.content ?? '';
			s.logprobs.push(...(c.logprobs?.content ?? []).map((e) => e.logprob));
			s.finish = c.finish_reason;
			const t = (c as { tabrl?: TabrlChoiceTokens }).tabrl;
			if (t) s.tokens = t;
		}
	}
	expect(ids.size, 'one id for all chunks').toBe(1);
	return { choices, usage };
}

describe('openaiClient on the real engine', () => {
	const gpu = useGpu();
	let chat: TinyChat;
	let client: OpenAI;

	beforeAll(async () => {
		chat = await tinyChat(gpu());
		client = openaiClient({ service: chat.service });
	});
	afterAll(() => chat?.release());

	it('answers in OpenAI schema with the prompt and sampled tokens in choice.tabrl', async () => {
		const r = tabrl(
			await client.chat.completions.create({
				model: MODEL_NAME,
				messages: USER,
				max_tokens: 5,
				temperature: 0
			})
		);
		expect(r.object).toBe('chat.completion');
		expect(r.id).toMatch(/^chatcmpl-/);
		expect(r.model).toBe(MODEL_NAME);
		expect(Number.isInteger(r.created)).toBe(true);
		expect(r.choices).toHaveLength(1);
		const [c] = r.choices;
		expect(c.index).toBe(0);
		expect(c.message.role).toBe('assistant');
		expect(c.logprobs).toBeNull();
		expect(['stop', 'length']).toContain(c.finish_reason);
		const promptIds = chat.tokenizer.encodeChat(USER, { addGenerationPrompt: true });
		expect(c.tabrl.prompt_ids).toEqual(promptIds);
		expect(c.tabrl.ids.length).toBeGreaterThan(0);
		expect(c.tabrl.ids.length).toBeLessThanOrEqual(5);
		expect(c.tabrl.logprobs).toHaveLength(c.tabrl.ids.length);
		expect(c.message.content).toBe(chat.tokenizer.decode(c.tabrl.ids, { skipSpecialTokens: true }));
		expect(r.usage).toEqual({
			prompt_tokens: promptIds.length,
			completion_tokens: c.tabrl.ids.length,
			total_tokens: promptIds.length + c.tabrl.ids.length
		});
	});

	it("finish_reason 'length' at max_tokens, and tabrl.logprobs are the model's (T = 1)", async () => {
		const r = tabrl(
			await client.chat.completions.create({
				model: MODEL_NAME,
				messages: USER,
				max_completion_tokens: 3,
				temperature: 1,
				seed: 11,
				logprobs: true
			})
		);
		const [c] = r.choices;
		const ends = new Set(chat.config.eosTokenIds);
		// A random model may end early; with this seed it does not (the test says which).
		expect(
			c.tabrl.ids.some((id) => ends.has(id)),
			'sampled an end token'
		).toBe(false);
		expect(c.tabrl.ids).toHaveLength(3);
		expect(c.finish_reason).toBe('length');
		// OpenAI logprob entries carry the same numbers, one per sampled token.
		expect(c.logprobs!.content!.map((e) => e.logprob)).toEqual(c.tabrl.logprobs);
		// The engine's logprobs at temperature 1 are the model's own: score the sequence.
		const full = [...c.tabrl.prompt_ids, ...c.tabrl.ids];
		const { logprobs } = await chat.model.scoreTokens([full]);
		const scored = Array.from(logprobs).slice(c.tabrl.prompt_ids.length - 1);
		expect(c.tabrl.logprobs).toBeAllclose(scored, { atol: 1e-4, rtol: 1e-4 });
	});

	it('repeats with the same seed; n choices each have their index and tokens', async () => {
		const ask = (seed: number) =>
			client.chat.completions.create({
				model: MODEL_NAME,
				messages: USER,
				max_tokens: 4,
				n: 3,
				temperature: 1.5,
				seed
			});
		const [a, b, c] = (await Promise.all([ask(3), ask(3), ask(4)])).map(tabrl);
		expect(a.choices.map((x) => x.index)).toEqual([0, 1, 2]);
		expect(b.choices.map((x) => x.tabrl.ids)).toEqual(a.choices.map((x) => x.tabrl.ids));
		expect(b.choices.map((x) => x.message.content)).toEqual(
			a.choices.map((x) => x.message.content)
		);
		expect(c.choices.map((x) => x.tabrl.ids)).not.toEqual(a.choices.map((x) => x.tabrl.ids));
		// At temperature 1.5 over ~380 tokens, three choices are not all the same.
		expect(new Set(a.choices.map((x) => x.tabrl.ids.join(','))).size).toBeGreaterThan(1);
		expect(a.usage!.completion_tokens).toBe(a.choices.reduce((s, x) => s + x.tabrl.ids.length, 0));
	});

	it('decodes concurrent unseeded requests (and their n choices) in one engine call', async () => {
		const before = chat.service.scheduler.callSizes.length;
		const ask = (n: number, max: number) =>
			client.chat.completions.create({
				model: MODEL_NAME,
				messages: [{ role: 'user', content: `question ${n}` }],
				max_tokens: max,
				n
			});
		const answers = (await Promise.all([ask(1, 2), ask(2, 4), ask(1, 3)])).map(tabrl);
		expect(chat.service.scheduler.callSizes.slice(before)).toEqual([4]);
		expect(answers.map((a) => a.choices.length)).toEqual([1, 2, 1]);
		// Each request keeps its own max_tokens inside the shared call.
		const ends = new Set(chat.config.eosTokenIds);
		for (const [a, max] of [
			[answers[0], 2],
			[answers[1], 4],
			[answers[2], 3]
		] as const)
			for (const c of a.choices) {
				const ended = ends.has(c.tabrl.ids.at(-1)!);
				expect(c.tabrl.ids.length).toBeLessThanOrEqual(max);
				expect(c.finish_reason).toBe(ended ? 'stop' : 'length');
				if (!ended) expect(c.tabrl.ids).toHaveLength(max);
			}
	});

	it('decodes concurrent seeded requests in one call, each as it samples alone', async () => {
		const ask = (seed: number, text: string) =>
			client.chat.completions.create({
				model: MODEL_NAME,
				messages: [{ role: 'user', content: text }],
				max_tokens: 4,
				n: 2,
				temperature: 1.5,
				seed
			});
		const alone = [];
		for (const [seed, text] of [
			[5, 'first question'],
			[6, 'second question']
		] as const)
			alone.push(tabrl(await ask(seed, text)));
		const before = chat.service.scheduler.callSizes.length;
		const together = (await Promise.all([ask(5, 'first question'), ask(6, 'second question')])).map(
			tabrl
		);
		expect(chat.service.scheduler.callSizes.slice(before)).toEqual([4]);
		expect(together.map((a) => a.choices.map((c) => c.tabrl.ids))).toEqual(
			alone.map((a) => a.choices.map((c) => c.tabrl.ids))
		);
	});

	it('streams chunks that add up to the whole answer (same seed)', async () => {
		const body = {
			model: MODEL_NAME,
			messages: USER,
			max_tokens: 6,
			n: 2,
			temperature: 1,
			seed: 21,
			logprobs: true
		};
		const whole = tabrl(await client.chat.completions.create(body));
		const stream = await client.chat.completions.create({
			...body,
			stream: true,
			stream_options: { include_usage: true }
		});
		const { choices, usage } = await sumStream(stream);
		expect([...choices.keys()].sort()).toEqual([0, 1]);
		for (const c of whole.choices) {
			const s = choices.get(c.index)!;
			expect(s.roles).toEqual(['assistant']);
			expect(s.content).toBe(c.message.content);
			expect(s.finish).toBe(c.finish_reason);
			expect(s.logprobs).toEqual(c.logprobs!.content!.map((e) => e.logprob));
			expect(s.tokens).toEqual(c.tabrl);
		}
		expect(usage).toEqual(whole.usage);
		// The package's own stream helper assembles the chunks into the same completion.
		const helper = client.chat.completions.stream(body);
		const assembled = await helper.finalChatCompletion();
		expect(assembled.choices.map((c) => [c.index, c.message.content, c.finish_reason])).toEqual(
			whole.choices.map((c) => [c.index, c.message.content, c.finish_reason])
		);
		expect(assembled.choices[0].logprobs?.content).toEqual(whole.choices[0].logprobs?.content);
	});

	it('stops at a stop string, which is left out of the text', async () => {
		// Seeded sampling repeats; this seed gives readable text (greedy gives byte tokens
		// that are not UTF-8 on this random model).
		const body = { model: MODEL_NAME, messages: USER, max_tokens: 10, temperature: 1, seed: 1 };
		const free = tabrl(await client.chat.completions.create(body));
		const text = free.choices[0].message.content!;
		// Three letters from inside the answer, likely spanning a token boundary.
		const match = /[a-z]{3}/.exec(text.slice(1));
		expect(match, `sampled text ${JSON.stringify(text)}`).not.toBeNull();
		const stop = match![0];
		const r = tabrl(await client.chat.completions.create({ ...body, stop: [stop] }));
		const [c] = r.choices;
		expect(c.message.content).toBe(text.slice(0, text.indexOf(stop)));
		expect(c.finish_reason).toBe('stop');
		// The sampled ids go up to the token that completed the stop string, no further.
		const n = c.tabrl.ids.length;
		expect(c.tabrl.ids).toEqual(free.choices[0].tabrl.ids.slice(0, n));
		expect(chat.tokenizer.decode(c.tabrl.ids, { skipSpecialTokens: true })).toContain(stop);
		expect(
			chat.tokenizer.decode(c.tabrl.ids.slice(0, -1), { skipSpecialTokens: true })
		).not.toContain(stop);
	});

	it('takes tools, an assistant tool call and its result through the template into the prompt', async () => {
		const messages = [
			{ role: 'system' as const, content: 'you are a helpful assistant' },
			...USER,
			{
				role: 'assistant' as const,
				content: null,
				tool_calls: [
					{
						id: 'call_1',
						type: 'function' as const,
						function: { name: 'get_weather', arguments: '{"city": "Paris"}' }
					}
				]
			},
			{ role: 'tool' as const, tool_call_id: 'call_1', content: '18 C and sunny' }
		];
		const r = tabrl(
			await client.chat.completions.create({
				model: MODEL_NAME,
				messages,
				tools: TOOLS,
				max_tokens: 2,
				temperature: 0
			})
		);
		const expected = chat.tokenizer.encodeChat(
			[
				messages[0],
				messages[1],
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
				messages[3]
			],
			{ tools: TOOLS, addGenerationPrompt: true, vars: {} }
		);
		const promptIds = r.choices[0].tabrl.prompt_ids;
		expect(promptIds).toEqual(expected);
		const text = chat.tokenizer.decode(promptIds);
		expect(text).toContain('Tools:\n{"type": "function", "function": {"name": "get_weather"');
		expect(text).toContain(
			'<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
		);
		expect(text).toContain('<|im_start|>tool\n18 C and sunny<|im_end|>');
		expect(text.endsWith('<|im_start|>assistant\n')).toBe(true);
	});

	it('raises the openai package errors: BadRequestError, NotFoundError', async () => {
		const bad = await client.chat.completions
			.create({ model: MODEL_NAME, messages: USER, temperature: 3 })
			.catch((e: unknown) => e);
		expect(bad).toBeInstanceOf(OpenAI.BadRequestError);
		const e = bad as InstanceType<typeof OpenAI.BadRequestError>;
		expect(e.status).toBe(400);
		expect(e.param).toBe('temperature');
		expect(e.type).toBe('invalid_request_error');

		const missing = await client.chat.completions
			.create({ model: 'gpt-4o', messages: USER })
			.catch((e: unknown) => e);
		expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
		expect((missing as InstanceType<typeof OpenAI.NotFoundError>).code).toBe('model_not_found');

		// A streamed request is validated before the first chunk: the same error.
		const streamed = await client.chat.completions
			.create({ model: MODEL_NAME, messages: [], stream: true })
			.catch((e: unknown) => e);
		expect(streamed).toBeInstanceOf(OpenAI.BadRequestError);
	});

	it('refuses a prompt past the context window, and max_tokens past what is left', async () => {
		const long = [{ role: 'user' as const, content: 'the quick brown fox '.repeat(150) }];
		const promptLength = chat.tokenizer.encodeChat(long, { addGenerationPrompt: true }).length;
		expect(promptLength).toBeGreaterThan(CONTEXT);
		for (const body of [
			{ model: MODEL_NAME, messages: long, max_tokens: 1 },
			{ model: MODEL_NAME, messages: USER, max_tokens: CONTEXT }
		]) {
			const e = await client.chat.completions.create(body).catch((x: unknown) => x);
			expect(e).toBeInstanceOf(OpenAI.BadRequestError);
			expect((e as InstanceType<typeof OpenAI.BadRequestError>).code).toBe(
				'context_length_exceeded'
			);
		}
	});

	it('answers a whole completion as the HTTP-framed path does: the same data, JSON-clean, the same errors', async () => {
		// the openai package over localFetch: every request framed as HTTP (the stream path's way)
		const framed = new OpenAI({
			apiKey: 'x',
			baseURL: LOCAL_BASE_URL,
			maxRetries: 0,
			fetch: localFetch(chat.service)
		});
		const body = {
			model: MODEL_NAME,
			messages: USER,
			max_tokens: 4,
			temperature: 1,
			seed: 5,
			n: 2,
			logprobs: true,
			top_logprobs: 2
		};
		const [direct, viaHttp] = await Promise.all([
			client.chat.completions.create(body),
			framed.chat.completions.create(body)
		]);
		const same = (c: object) => ({ ...c, id: '', created: 0 });
		expect(same(direct)).toStrictEqual(JSON.parse(JSON.stringify(same(viaHttp))));
		expect(direct).toStrictEqual(JSON.parse(JSON.stringify(direct)));
		const bad = { model: MODEL_NAME, messages: USER, temperature: 3 };
		const [e1, e2] = await Promise.all(
			[client, framed].map((c) => c.chat.completions.create(bad).catch((e: unknown) => e))
		);
		expect(e1).toBeInstanceOf(OpenAI.BadRequestError);
		for (const key of ['status', 'message', 'code', 'param', 'type', 'error'] as const)
			expect((e1 as InstanceType<typeof OpenAI.APIError>)[key]).toStrictEqual(
				(e2 as InstanceType<typeof OpenAI.APIError>)[key]
			);
		// .withResponse() and .asResponse() as the package offers them
		const { data, response } = await client.chat.completions
			.create({ ...body, n: 1 })
			.withResponse();
		expect(response.status).toBe(200);
		expect(await response.json()).toStrictEqual(data);
		expect((await client.chat.completions.create({ ...body, n: 1 }).asResponse()).status).toBe(200);
		// a signal already aborted: the package's own abort error, nothing decoded
		const aborted = await client.chat.completions
			.create(body, { signal: AbortSignal.abort() })
			.catch((e: unknown) => e);
		expect(aborted).toBeInstanceOf(OpenAI.APIUserAbortError);
	});

	it('lists the model', async () => {
		const list = await client.models.list();
		expect(list.data.map((m) => m.id)).toEqual([MODEL_NAME]);
		expect((await client.models.retrieve(MODEL_NAME)).id).toBe(MODEL_NAME);
	});
});
