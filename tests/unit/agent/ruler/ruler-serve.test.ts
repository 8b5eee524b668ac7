/**
 * RULER with TabRL's own engine as the judge over real HTTP (tiny random Llama behind the
 * OpenAI-compatible server, asked through the `openai` client): constrained to
 * `exactResponseFormat`, a random model's every reply passes RULER's checks, with no
 * re-ask; with ART's schema alone its ids are noise, refused, re-asked once, then a
 * JudgeReplyError.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listenChatServer, type ChatHttpServer } from '../../../../src/lib/serve/node/http-server';
import { ChatService } from '../../../../src/lib/serve/service';
import {
	exactResponseFormat,
	JudgeReplyError,
	RESPONSE_FORMAT,
	rulerScoreGroup,
	type JudgeEndpoint
} from '../../../../src/lib/agent/ruler';
import { Trajectory, TrajectoryGroup } from '../../../../src/lib/agent/trajectory';
import { Generator } from '../../../../src/lib/model/generate/generator';
import { useGpu } from '../../../helpers/gpu';
import { MODEL_NAME, tinyChat, type TinyChat } from '../../serve/openai-setup';

/** The judge prompt is ~1000 tiny tokens (the system prompt, three short games). */
const JUDGE_CONTEXT = 2048;

interface Item {
	properties: { explanation: Record<string, unknown> };
}
/** A format's explanations cut to 8 characters (a random model's string rarely ends). */
function shortExplanations(format: typeof RESPONSE_FORMAT): typeof RESPONSE_FORMAT {
	const schema = structuredClone(format.json_schema.schema) as {
		properties: { scores: { items: Item | false; prefixItems?: Item[] } };
	};
	const { scores } = schema.properties;
	for (const item of [...(scores.prefixItems ?? []), scores.items])
		if (item) item.properties.explanation.maxLength = 8;
	return { ...format, json_schema: { ...format.json_schema, schema } };
}

function game(move: string, reward: number): Trajectory {
	return new Trajectory({
		messagesAndChoices: [
			{ role: 'system', content: 'Play tic-tac-toe as X.' },
			{ role: 'user', content: '...\n.O.\n...' },
			{ role: 'assistant', content: `<move>${move}</move>` }
		],
		reward
	});
}

describe('RULER judged by TabRL serve (a real model over HTTP, constrained)', () => {
	const gpu = useGpu();
	let chat: TinyChat;
	let generator: Generator;
	let http: ChatHttpServer;
	let requests = 0;

	beforeAll(async () => {
		chat = await tinyChat(gpu());
		generator = new Generator(chat.model, { maxContext: JUDGE_CONTEXT });
		const service = new ChatService({
			engine: {
				contextLength: generator.contextLength,
				generate: (prompts, options) => {
					requests++;
					return generator.generate(prompts, options);
				}
			},
			tokenizer: chat.tokenizer,
			model: MODEL_NAME,
			scheduler: { stopTokenIds: chat.config.eosTokenIds }
		});
		http = await listenChatServer(service, { port: 0 });
	});
	afterAll(async () => {
		await http?.close();
		generator?.release();
		await chat?.release();
	});

	const judge = (responseFormat: JudgeEndpoint['responseFormat']): JudgeEndpoint => ({
		baseURL: `${http.url}/v1`,
		model: MODEL_NAME,
		responseFormat,
		extraBody: { seed: 11, max_completion_tokens: 600 },
		maxRetries: 0
	});
	const group = () => new TrajectoryGroup([game('A1', 0), game('B2', 1), game('C3', 0.5)]);

	it('exact schema: every trajectory scored in [0, 1] on the first reply', async () => {
		requests = 0;
		const scored = await rulerScoreGroup(group(), {
			judge: judge((ids) => shortExplanations(exactResponseFormat(ids))),
			rubric: 'Higher is better.'
		});
		expect(requests).toBe(1); // no re-ask: the constrained reply passed every check
		expect(scored!.trajectories).toHaveLength(3);
		for (const [i, t] of scored!.trajectories.entries()) {
			const score = t.metrics.ruler_score as number;
			expect(score).toBeGreaterThanOrEqual(0);
			expect(score).toBeLessThanOrEqual(1);
			expect(t.reward).toBe(score);
			expect(t.metrics.independent_reward).toBe(group().trajectories[i].reward);
			expect(t.logs.at(-1)).toMatch(/^RULER explanation: .{0,8}$/s);
		}
		expect(scored!.metrics.ruler_judge_reasks).toBe(0);
		expect(scored!.metrics.ruler_judge_completion_tokens).toBeGreaterThan(10);
	}, 300_000);

	it("ART's schema alone: the random judge's ids are refused, re-asked once, then a typed error", async () => {
		requests = 0;
		const error = await rulerScoreGroup(group(), {
			judge: judge(() => shortExplanations(RESPONSE_FORMAT)),
			rubric: 'Higher is better.'
		}).catch((e: unknown) => e);
		expect(error).toBeInstanceOf(JudgeReplyError);
		expect((error as JudgeReplyError).attempts).toHaveLength(2);
		expect(requests).toBe(2);
	}, 300_000);
});
