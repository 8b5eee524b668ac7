/**
 * JSONL in ART's shape (src/lib/agent/jsonl.ts): the field names on the wire, the round
 * trip of trajectories and groups (choices with their tabrl tokens, tool calls, tools,
 * additional histories, metrics, metadata, logs) down to identical training sequences, a
 * line as ART's pydantic model writes it, and typed errors naming the line and field.
 */
import { describe, expect, it } from 'vitest';
import { TrajectoryFormatError } from '../../../src/lib/agent/errors';
import {
	groupsFromJsonl,
	groupsToJsonl,
	trajectoryFromJson,
	trajectoryToJson,
	type TrajectoryJson
} from '../../../src/lib/agent/jsonl';
import { trajectoryToSequences } from '../../../src/lib/agent/to-train';
import {
	Trajectory,
	TrajectoryGroup,
	isChoice,
	type Choice
} from '../../../src/lib/agent/trajectory';
import { validateTrajectory } from '../../../src/lib/agent/validate';
import { choice, system, user } from './trajectory-fixtures';

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

function sample(): Trajectory {
	const call: Choice = {
		...choice([1, 2], [3, 4], ''),
		finish_reason: 'tool_calls',
		message: {
			role: 'assistant',
			content: null,
			refusal: null,
			tool_calls: [
				{
					id: 'call_1',
					type: 'function',
					function: { name: 'get_weather', arguments: '{"city":"Oslo"}' }
				}
			]
		}
	};
	const t = new Trajectory({
		messagesAndChoices: [
			system('You are helpful.'),
			user('Weather in Oslo? ü ✓'),
			call,
			{ role: 'tool', tool_call_id: 'call_1', content: '-3 C' },
			choice([1, 2, 3, 4, 5, 6], [7, 8], 'Cold: -3 C.')
		],
		tools: TOOLS,
		additionalHistories: [
			{ messagesAndChoices: [user('summarize'), choice([20], [21, 22], 'ok')], tools: null }
		],
		reward: 0.75,
		metrics: { win: true, num_moves: 3, duration: 1.5 },
		metadata: { scenario: 'oslo', seed: 7, hard: false, note: null }
	});
	t.log('called get_weather');
	return t;
}

describe('JSONL in ART shape', () => {
	it("writes ART's field names, one object per line", () => {
		// ART's JSONL is a TrajectoryGroup a line: two groups of one
		const text = groupsToJsonl([
			new TrajectoryGroup([sample()]),
			new TrajectoryGroup([new Trajectory({ reward: 1 })])
		]);
		const lines = text.split('\n');
		expect(lines).toHaveLength(3);
		expect(lines[2]).toBe('');
		const first = JSON.parse(lines[0]).trajectories[0];
		expect(Object.keys(first)).toEqual([
			'messages_and_choices',
			'tools',
			'additional_histories',
			'reward',
			'metrics',
			'metadata',
			'logs'
		]);
		expect(Object.keys(first.additional_histories[0])).toEqual(['messages_and_choices', 'tools']);
		// the sampled tokens where ART reads them (vLLM's return_token_ids and
		// return_tokens_as_token_ids fields), no TabRL record
		const sampled = first.messages_and_choices[4];
		expect(sampled.tabrl).toBeUndefined();
		expect(sampled.prompt_token_ids).toEqual([1, 2, 3, 4, 5, 6]);
		expect(sampled.token_ids).toEqual([7, 8]);
		expect(sampled.logprobs).toEqual({
			content: [
				{ token: 'token_id:7', logprob: -0.1, bytes: null, top_logprobs: [] },
				{ token: 'token_id:8', logprob: -0.2, bytes: null, top_logprobs: [] }
			],
			refusal: null
		});
		expect(JSON.parse(lines[1]).trajectories[0]).toEqual({
			messages_and_choices: [],
			tools: null,
			additional_histories: [],
			reward: 1,
			metrics: {},
			metadata: {},
			logs: []
		});
	});

	it('round-trips a trajectory down to the same training sequences', () => {
		const t = sample();
		const [back, ...rest] = groupsFromJsonl(groupsToJsonl([new TrajectoryGroup([t])]))[0]
			.trajectories;
		expect(rest).toEqual([]);
		expect(back).toBeInstanceOf(Trajectory);
		expect(trajectoryToJson(back)).toEqual(trajectoryToJson(t));
		expect(back.messagesAndChoices.map(isChoice)).toEqual([false, false, true, false, true]);
		expect(back.messages()).toEqual(t.messages());
		expect(validateTrajectory(back)).toBe(3);
		expect(trajectoryToSequences(back, { advantage: 1 })).toEqual(
			trajectoryToSequences(t, { advantage: 1 })
		);
	});

	it("ART's reader of a line finds each sampled choice's exact tokens and logprobs", () => {
		// What ART's tokenizer does with a JSONL line (facts from OpenPipe/ART
		// src/art/preprocessing/tokenize.py and vllm_tokens.py): a line is a TrajectoryGroup; a
		// trainable choice has logprobs; its prompt and completion ids are the choice's
		// `prompt_token_ids` and `token_ids` extras, else it refuses ("missing vLLM
		// prompt_token_ids/token_ids"); its logprobs are `logprobs.content[i].logprob`, exactly
		// as many as the token ids, else it refuses.
		type ArtChoice = {
			logprobs: { content: { logprob: number }[] | null } | null;
			prompt_token_ids?: number[];
			token_ids?: number[];
		};
		const artTokens = (line: string) =>
			(JSON.parse(line) as { trajectories: TrajectoryJson[] }).trajectories.flatMap((t) =>
				[t, ...t.additional_histories].flatMap((h) =>
					h.messages_and_choices
						.filter((m) => !('role' in m) && 'message' in m)
						.map((m) => m as unknown as ArtChoice)
						.filter((c) => c.logprobs !== null)
						.map((c) => {
							if (!c.prompt_token_ids || !c.token_ids)
								throw new Error('Trainable Choice is missing vLLM prompt_token_ids/token_ids');
							const logprobs = (c.logprobs!.content ?? []).map((e) => Number(e.logprob));
							if (logprobs.length !== c.token_ids.length)
								throw new Error('Choice logprob length does not match the token ids');
							return { prompt_ids: c.prompt_token_ids, ids: c.token_ids, logprobs };
						})
				)
			);
		const t = sample();
		const line = groupsToJsonl([new TrajectoryGroup([t])]).trim();
		const sampled = [t, ...t.additionalHistories].flatMap((h) =>
			h.messagesAndChoices.filter(isChoice).map((c) => c.tabrl)
		);
		expect(sampled).toHaveLength(3); // (the tool call, the answer, the side history's)
		expect(artTokens(line)).toEqual(sampled);
	});

	it('round-trips groups with their captured exceptions', () => {
		const g = new TrajectoryGroup(
			[sample(), new Error('rollout failed'), new Trajectory({ reward: 0 })],
			{
				metadata: { step: 3 },
				metrics: { judged: true }
			}
		);
		g.log('RULER scored');
		const text = groupsToJsonl([g, new TrajectoryGroup()]);
		expect(Object.keys(JSON.parse(text.split('\n')[0]))).toEqual([
			'trajectories',
			'exceptions',
			'metadata',
			'metrics',
			'logs'
		]);
		const [back, empty] = groupsFromJsonl(text);
		const json = (t: Trajectory) => trajectoryToJson(t);
		expect(back.trajectories.map(json)).toEqual(g.trajectories.map(json));
		expect(groupsToJsonl([back, empty])).toBe(text); // the file round-trips byte for byte
		expect(back.exceptions).toEqual(g.exceptions);
		expect(back.exceptions[0].message).toBe('rollout failed');
		expect([back.metadata, back.metrics, back.logs]).toEqual([
			{ step: 3 },
			{ judged: true },
			['RULER scored']
		]);
		expect(empty.trajectories).toEqual([]);
	});

	it("reads a line as ART's pydantic model writes it (defaults omitted, extra fields)", () => {
		// model_dump_json(exclude_defaults=True) of a trajectory with one vLLM-style choice.
		const line = JSON.stringify({
			messages_and_choices: [
				{ role: 'user', content: 'hi' },
				{
					finish_reason: 'stop',
					index: 0,
					logprobs: { content: [], refusal: null },
					message: { content: 'hello', refusal: null, role: 'assistant', annotations: null },
					tabrl: { prompt_ids: [5, 6], ids: [7], logprobs: [-0.5] }
				}
			],
			reward: 1.0,
			initial_policy_version: 2
		});
		const t = trajectoryFromJson(JSON.parse(line));
		expect(t.reward).toBe(1);
		expect(t.tools).toBeNull();
		expect(t.additionalHistories).toEqual([]);
		expect(t.metrics).toEqual({});
		expect(t.messages()).toEqual([
			{ role: 'user', content: 'hi' },
			{ role: 'assistant', content: 'hello' }
		]);
		expect(trajectoryToSequences(t, { advantage: 1 })[0].ids).toEqual([5, 6, 7]);
	});

	it('a non-finite reward does not survive JSON: reading it back is an error', () => {
		const text = groupsToJsonl([new TrajectoryGroup([new Trajectory({ reward: NaN })])]);
		expect(text).toContain('"reward":null');
		expect(() => groupsFromJsonl(text)).toThrow(/reward: expected a finite number, got null/);
	});

	it('reads a lone trajectory a line as a group of one, and refuses a line that is neither, by number', () => {
		const lone = JSON.stringify(trajectoryToJson(sample()));
		const group = groupsToJsonl([new TrajectoryGroup([sample(), sample()])]).trim();
		const groups = groupsFromJsonl(`${lone}\n${group}\n${lone}\n`);
		expect(groups.map((g) => g.trajectories.length)).toEqual([1, 2, 1]);
		expect(trajectoryToJson(groups[0].trajectories[0])).toEqual(trajectoryToJson(sample()));
		expect(() => groupsFromJsonl(`${lone}\n{"score": 1}\n`)).toThrow(
			/^Line 2, the line: neither a TrajectoryGroup \("trajectories"\) nor a Trajectory/
		);
	});

	it('refuses what is not a trajectory, naming the line and the field', () => {
		const good = JSON.stringify(trajectoryToJson(sample()));
		const cases: [string, RegExp][] = [
			['{not json', /^Line 2: not JSON/],
			['[1, 2]', /^Line 2, the line: expected an object/],
			['{"reward": "high"}', /^Line 2, reward: expected a finite number/],
			[
				'{"messages_and_choices": [{"content": "who am I"}]}',
				/messages_and_choices\[0\]: neither a chat message/
			],
			['{"messages_and_choices": {}}', /messages_and_choices: expected an array/],
			['{"metrics": {"win": "yes"}}', /metrics\.win: expected a number or a boolean/],
			['{"metadata": {"deep": {"a": 1}}}', /metadata\.deep: expected a JSON scalar/],
			['{"logs": [1]}', /logs\[0\]: expected a string/],
			[
				'{"additional_histories": [{"messages_and_choices": [7]}]}',
				/additional_histories\[0\]\.messages_and_choices\[0\]: expected an object/
			],
			['{"exchanges": {"chat_completions": [{}]}}', /exchanges: ART's exchange-capture format/]
		];
		for (const [bad, message] of cases) {
			const text = `${good}\n${bad}\n\n${good}\n`;
			let error: unknown;
			try {
				groupsFromJsonl(text);
			} catch (e) {
				error = e;
			}
			expect(error, bad).toBeInstanceOf(TrajectoryFormatError);
			expect((error as TrajectoryFormatError).line, bad).toBe(2);
			expect((error as Error).message, bad).toMatch(message);
		}
		// Blank lines are skipped; both good lines read.
		expect(groupsFromJsonl(`${good}\n\n   \n${good}`)).toHaveLength(2);
	});
});
