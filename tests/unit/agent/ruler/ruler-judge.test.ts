/**
 * RULER against a scripted judge on real HTTP (node:http, in this file) through the official
 * client, no mocks: ART's scores, metrics, logs and copies; the strict request; ids matched
 * out of order; dedupe; bad replies re-asked once then typed errors; 429 / 500 retried, a
 * hang cut; swallowExceptions; a shared judge's concurrency; a client judge; `cli judge`.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { gatherTrajectoryGroups, type GatherProgress } from '../../../../src/lib/agent/gather';
import { trajectoryToJson } from '../../../../src/lib/agent/jsonl';
import {
	DEFAULT_RUBRIC,
	Judge,
	JudgeReplyError,
	JudgeRequestError,
	RESPONSE_FORMAT,
	RulerInputError,
	RulerOptionsError,
	checkReply,
	judgeSystemPrompt,
	ruler,
	rulerScoreGroup,
	type JudgeClient,
	type JudgeOptions
} from '../../../../src/lib/agent/ruler';
import { Trajectory, TrajectoryGroup } from '../../../../src/lib/agent/trajectory';
import {
	completion,
	ok,
	ScriptedJudge,
	trajectoriesOf,
	type ChatMessage,
	type Behaviour,
	type Seen
} from '../../../../src/lib/testing/scripted-judge';
import { runCli } from '../../cli/run-cli';

// ---- the rule the scripted judge follows here ----

/** The score a trajectory asks for: the last "<<x>>" in its text. */
function markedScore(text: string): number {
	const marks = [...text.matchAll(/<<([0-9.]+)>>/g)];
	return marks.length ? Number(marks.at(-1)![1]) : 0;
}

/** The rule-following judge: each trajectory's marked score, in id order (or reversed). */
function ruleReply(seen: Seen, reverse = false): string {
	const entries = [...trajectoriesOf(seen)].map(([id, text]) => ({
		trajectory_id: id,
		explanation: `trajectory ${id} earned ${markedScore(text)}`,
		score: markedScore(text)
	}));
	return JSON.stringify({ scores: reverse ? entries.reverse() : entries });
}
const follows: Behaviour = (seen) => ok(ruleReply(seen));

// ---- trajectories ----

const SYSTEM = { role: 'system' as const, content: 'You play tic-tac-toe as X.' };
const BOARD = { role: 'user' as const, content: 'Board:\n...\n...\n...\nYour move.' };

/** A game whose last reply carries the score the rule judge will give it. */
function game(score: number, reward = score > 0.5 ? 1 : 0, move = `${score}`): Trajectory {
	return new Trajectory({
		messagesAndChoices: [
			SYSTEM,
			BOARD,
			{ role: 'assistant', content: `<move>${move}</move> <<${score}>>` }
		],
		reward,
		metrics: { moves: 3 },
		metadata: { game: move },
		logs: ['played']
	});
}

const quiet = { onSwallowed: () => undefined };

describe('RULER on a scripted judge over loopback HTTP', () => {
	const judge = new ScriptedJudge(follows);
	let options: JudgeOptions;
	let dir: string;

	beforeAll(async () => {
		await judge.start();
		dir = await mkdtemp(join(tmpdir(), 'tabrl-ruler-'));
	});
	afterAll(async () => {
		await judge.stop();
		await rm(dir, { recursive: true, force: true });
	});
	beforeEach(() => {
		judge.reset();
		// A fresh options object: a fresh Judge (client, limit, stats) per test.
		options = { baseURL: judge.url, apiKey: 'sk-test', model: 'judge-1', maxRetries: 2 };
	});

	it("scores a group as ART's ruler_score_group: rewards, metrics, logs, copies", async () => {
		const group = new TrajectoryGroup([game(0.9), game(0.2), game(0.55), game(0)], {
			metadata: { scenario: 7 },
			metrics: { seen: 1 }
		});
		const before = JSON.stringify(group);
		const scored = await rulerScoreGroup(group, {
			judge: { ...options, extraBody: { temperature: 0 } }
		});
		expect(scored).not.toBeNull();
		const ts = scored!.trajectories;
		expect(ts.map((t) => t.reward)).toEqual([0.9, 0.2, 0.55, 0]);
		expect(ts.map((t) => t.metrics.ruler_score)).toEqual([0.9, 0.2, 0.55, 0]);
		expect(ts.map((t) => t.metrics.independent_reward)).toEqual([1, 0, 1, 0]);
		expect(ts[0].metrics.moves).toBe(3);
		expect(ts[1].logs).toEqual(['played', 'RULER explanation: trajectory 2 earned 0.2']);
		expect(ts[2].metadata).toEqual({ game: '0.55' });
		// The group given is untouched; the new one keeps its metadata and metrics.
		expect(JSON.stringify(group)).toBe(before);
		expect(ts[0]).not.toBe(group.trajectories[0]);
		expect(scored!.metadata).toEqual({ scenario: 7 });
		expect(scored!.metrics).toMatchObject({
			seen: 1,
			ruler_judge_prompt_tokens: 100,
			ruler_judge_completion_tokens: 20,
			ruler_judge_cost: 0.0015,
			ruler_judge_reasks: 0,
			ruler_judge_invalid_replies: 0,
			ruler_judged_trajectories: 4
		});
		expect(scored!.metrics.ruler_judge_latency_ms).toBeGreaterThan(0);

		// One request, as ART makes it: the strict schema, the prompt, the key as bearer.
		expect(judge.seen).toHaveLength(1);
		const { body, authorization } = judge.seen[0];
		expect(authorization).toBe('Bearer sk-test');
		expect(body.model).toBe('judge-1');
		expect(body.temperature).toBe(0);
		expect(body.response_format).toEqual(RESPONSE_FORMAT);
		expect(RESPONSE_FORMAT.json_schema.strict).toBe(true);
		expect(body.messages[0]).toEqual({ role: 'system', content: judgeSystemPrompt() });
		expect(body.messages[1].content.startsWith('<context>\n[{"role": "system"')).toBe(true);
		expect(trajectoriesOf(judge.seen[0]).size).toBe(4);
	});

	it('matches scores by id when the judge answers out of order', async () => {
		judge.reset((seen) => ok(ruleReply(seen, true)));
		const scores = await ruler(
			[0.1, 0.7, 0.4].map((s) => game(s).messages()),
			{ judge: options }
		);
		expect(scores.map((s) => [s.trajectory_id, s.score])).toEqual([
			['1', 0.1],
			['2', 0.7],
			['3', 0.4]
		]);
		expect(await ruler([], { judge: options })).toEqual([]);
		expect(judge.seen).toHaveLength(1); // nothing to judge: no request
	});

	it('sends identical trajectories once and gives each copy the score', async () => {
		const group = new TrajectoryGroup([game(0.8), game(0.3), game(0.8), game(0.3), game(0.5)]);
		const scored = await rulerScoreGroup(group, { judge: options });
		expect(scored!.trajectories.map((t) => t.reward)).toEqual([0.8, 0.3, 0.8, 0.3, 0.5]);
		expect([...trajectoriesOf(judge.seen[0]).keys()]).toEqual(['1', '2', '3']);
		expect(scored!.metrics.ruler_judged_trajectories).toBe(3);

		// All identical: one full trajectory (no <context>), as ART sends it.
		judge.reset();
		const same = await rulerScoreGroup(new TrajectoryGroup([game(0.6), game(0.6)]), {
			judge: options
		});
		expect(same!.trajectories.map((t) => t.reward)).toEqual([0.6, 0.6]);
		expect(judge.seen[0].body.messages[1].content.startsWith('Trajectories:\n\n')).toBe(true);
		expect(trajectoriesOf(judge.seen[0]).get('1')).toContain('You play tic-tac-toe');

		// dedupe: false sends every one, as ART does.
		judge.reset();
		await ruler(
			[game(0.8), game(0.3), game(0.8)].map((t) => t.messages()),
			{
				judge: options,
				dedupe: false
			}
		);
		expect(trajectoriesOf(judge.seen[0]).size).toBe(3);
	});

	const scores4 = (entries: [string, number][]) =>
		JSON.stringify({
			scores: entries.map(([id, score]) => ({ trajectory_id: id, explanation: 'x', score }))
		});
	const BAD_REPLIES: [string, string | null, RegExp][] = [
		[
			'empty scores',
			'{"scores": []}',
			/expected exactly 4 scores .* got 0.*no score for trajectory ids 1, 2, 3, 4/s
		],
		[
			'3 scores for 4',
			scores4([
				['1', 0.1],
				['2', 0.2],
				['3', 0.3]
			]),
			/expected exactly 4 scores \(one per trajectory\), got 3.*no score for trajectory id 4/s
		],
		[
			'a duplicate id',
			scores4([
				['1', 0.1],
				['2', 0.2],
				['2', 0.3],
				['4', 0.4]
			]),
			/no score for trajectory id 3.*trajectory id 2 is scored 2 times/s
		],
		[
			'an unexpected id',
			scores4([
				['1', 0.1],
				['2', 0.2],
				['3', 0.3],
				['5', 0.5]
			]),
			/no score for trajectory id 4.*unexpected trajectory id "5" \(the ids are 1, 2, 3, 4\)/s
		],
		[
			'score 7',
			scores4([
				['1', 0.1],
				['2', 7],
				['3', 0.3],
				['4', 0.4]
			]),
			/the score of trajectory 2 is 7, outside \[0, 1\]/
		],
		[
			'a negative score',
			scores4([
				['1', -0.5],
				['2', 0.2],
				['3', 0.3],
				['4', 0.4]
			]),
			/trajectory 1 is -0.5, outside \[0, 1\]/
		],
		[
			'NaN',
			'{"scores": [{"trajectory_id": "1", "explanation": "x", "score": NaN}]}',
			/NaN and Infinity are not JSON numbers/
		],
		[
			'1e999',
			scores4([
				['1', 0.1],
				['2', 0.2],
				['3', 0.3]
			]).replace(']}', ', {"trajectory_id": "4", "explanation": "x", "score": 1e999}]}'),
			/trajectory 4 is Infinity, not a finite number/
		],
		[
			'a string score',
			scores4([
				['1', 0.1],
				['2', 0.2],
				['3', 0.3]
			]).replace(']}', ', {"trajectory_id": "4", "explanation": "x", "score": "0.4"}]}'),
			/the score of trajectory 4 is the string "0.4", not a number/
		],
		[
			'a number id',
			'{"scores": [{"trajectory_id": 1, "explanation": "x", "score": 0.1}]}',
			/scores\[0\].trajectory_id is the number 1, not a string \(write it as "1"\)/
		],
		[
			'prose around the JSON',
			`Sure! Here are the scores:\n${scores4([
				['1', 0.1],
				['2', 0.2],
				['3', 0.3],
				['4', 0.4]
			])}`,
			/text before the JSON object \(it begins "Sure! Here are the scores:/
		],
		[
			'prose after the JSON',
			`${scores4([
				['1', 0.1],
				['2', 0.2],
				['3', 0.3],
				['4', 0.4]
			])}\nHope this helps.`,
			/text after the JSON object/
		],
		[
			'a Markdown fence',
			'```json\n' +
				scores4([
					['1', 0.1],
					['2', 0.2],
					['3', 0.3],
					['4', 0.4]
				]) +
				'\n```',
			/text before the JSON object \(it begins "```json/
		],
		['no content', null, /the reply was empty/],
		['no scores key', '{"ratings": []}', /the reply has no "scores" array/]
	];

	for (const [what, reply, problem] of BAD_REPLIES)
		it(`re-asks once after ${what}, naming the problem, and uses the second reply`, async () => {
			judge.reset((seen, n) => (n === 0 ? ok(reply) : ok(ruleReply(seen))));
			const group = new TrajectoryGroup([game(0.9), game(0.2), game(0.55), game(0.05)]);
			const scored = await rulerScoreGroup(group, { judge: options });
			expect(scored!.trajectories.map((t) => t.reward)).toEqual([0.9, 0.2, 0.55, 0.05]);
			expect(scored!.metrics.ruler_judge_reasks).toBe(1);
			expect(scored!.metrics.ruler_judge_invalid_replies).toBe(1);
			expect(scored!.metrics.ruler_judge_prompt_tokens).toBe(200); // both answers counted
			expect(judge.seen).toHaveLength(2);
			// The conversation is kept: the judge's reply, then the correction.
			const [first, second] = judge.seen.map((s) => s.body.messages);
			expect(second.slice(0, 2)).toEqual(first);
			expect(second[2]).toEqual({ role: 'assistant', content: reply ?? '' });
			expect(second[3].role).toBe('user');
			expect(second[3].content).toMatch(/^Your reply could not be used:\n- /);
			expect(second[3].content).toMatch(problem);
			expect(second[3].content).toContain('exactly one entry for each trajectory id (1, 2, 3, 4)');
			expect(second).toHaveLength(4);
		});

	it('gives up after the re-ask with a typed error listing both replies’ problems', async () => {
		judge.reset((_, n) => ok(n === 0 ? '{"scores": []}' : 'I cannot grade these.'));
		const j = new Judge(options);
		const err = await rulerScoreGroup(new TrajectoryGroup([game(0.9), game(0.2)]), {
			judge: j
		}).catch((e: unknown) => e);
		expect(err).toBeInstanceOf(JudgeReplyError);
		const e = err as JudgeReplyError;
		expect(e.kind).toBe('ruler-judge-reply');
		expect(e.attempts).toHaveLength(2);
		expect(e.attempts[0].join()).toMatch(/got 0/);
		expect(e.attempts[1].join()).toMatch(/no JSON object \(it begins "I cannot grade these."\)/);
		expect(e.message).toMatch(
			/judge 'judge-1' at http:\/\/127\.0\.0\.1:\d+\/v1 gave no valid scores in 2 replies/
		);
		expect(e.lastReply).toBe('I cannot grade these.');
		expect(judge.seen).toHaveLength(2); // one re-ask, not more
		expect(j.stats).toMatchObject({
			requests: 2,
			invalidReplies: 2,
			reasks: 1,
			failed: 1,
			scored: 0
		});
	});

	it('retries 429 and 500 (the client’s backoff, retry-after-ms honoured), then succeeds', async () => {
		for (const status of [429, 500, 503]) {
			judge.reset((seen, n) =>
				n === 0
					? {
							status,
							json: { error: { message: `busy ${status}` } },
							headers: { 'retry-after-ms': '5' }
						}
					: ok(ruleReply(seen))
			);
			const scores = await ruler(
				[game(0.3), game(0.6)].map((t) => t.messages()),
				{
					judge: options
				}
			);
			expect(scores.map((s) => s.score)).toEqual([0.3, 0.6]);
			expect(judge.seen).toHaveLength(2);
		}
	});

	it('an HTTP error past the retries is a JudgeRequestError with the status', async () => {
		judge.reset(() => ({
			status: 429,
			json: { error: { message: 'rate limited' } },
			headers: { 'retry-after-ms': '1' }
		}));
		const err = await ruler([game(0.3).messages()], { judge: { ...options, maxRetries: 1 } }).catch(
			(e: unknown) => e
		);
		expect(err).toBeInstanceOf(JudgeRequestError);
		expect(err).toMatchObject({ kind: 'ruler-judge-request', reason: 'http', status: 429 });
		expect((err as Error).message).toMatch(/answered HTTP 429 \(2 attempts\): .*rate limited/);
		expect(judge.seen).toHaveLength(2);

		judge.reset(() => ({ status: 401, json: { error: { message: 'bad key' } } }));
		const auth = await ruler([game(0.3).messages()], { judge: options }).catch((e: unknown) => e);
		expect(auth).toMatchObject({ kind: 'ruler-judge-request', status: 401 });
		expect((auth as Error).message).toMatch(/Check the API key/);
		expect((auth as Error).message).not.toContain('sk-test');
		expect(judge.seen).toHaveLength(1); // 401 is not retried
	});

	it('a judge that hangs is cut at timeoutMs, retried, then a timeout error', async () => {
		judge.reset(() => ({ hang: true }));
		const t0 = performance.now();
		const err = await ruler([game(0.3).messages(), game(0.4).messages()], {
			judge: { ...options, timeoutMs: 150, maxRetries: 1 }
		}).catch((e: unknown) => e);
		const elapsed = performance.now() - t0;
		expect(err).toBeInstanceOf(JudgeRequestError);
		expect(err).toMatchObject({ kind: 'ruler-judge-request', reason: 'timeout' });
		expect((err as Error).message).toMatch(/did not answer within 150 ms \(2 attempts\)/);
		expect(judge.seen).toHaveLength(2);
		expect(elapsed).toBeGreaterThanOrEqual(300);
		expect(elapsed).toBeLessThan(3000); // two timeouts and one backoff (<= 0.5 s)
	});

	it('an unreachable judge is a connection error', async () => {
		const err = await ruler([game(0.3).messages()], {
			judge: { baseURL: 'http://127.0.0.1:9/v1', model: 'm', maxRetries: 0 }
		}).catch((e: unknown) => e);
		expect(err).toMatchObject({ kind: 'ruler-judge-request', reason: 'connection' });
		expect((err as Error).message).toMatch(/could not be reached/);
	});

	it('swallowExceptions: null for a failed group, which gather drops and counts', async () => {
		// Groups whose games mention FAIL get garbage, twice; the others are scored.
		judge.reset((seen) =>
			seen.body.messages[1].content.includes('FAIL') ? ok('no idea') : ok(ruleReply(seen))
		);
		const swallowed: unknown[] = [];
		const progress: GatherProgress[] = [];
		const groups = await gatherTrajectoryGroups(
			[
				[game(0.1), game(0.9)],
				[game(0.2, 0, 'FAIL'), game(0.3, 0, 'FAIL b')],
				[game(0.4), game(0.5)]
			],
			{
				afterEach: (g) =>
					rulerScoreGroup(g, {
						judge: options,
						swallowExceptions: true,
						onSwallowed: (e) => swallowed.push(e)
					}),
				onProgress: (p) => progress.push(p)
			}
		);
		expect(groups.map((g) => g.trajectories.map((t) => t.reward))).toEqual([
			[0.1, 0.9],
			[0.4, 0.5]
		]);
		expect(progress.at(-1)!.droppedGroups).toBe(1);
		expect(swallowed).toHaveLength(1);
		expect(swallowed[0]).toBeInstanceOf(JudgeReplyError);

		// Without swallowExceptions the failure is thrown; input errors always are.
		await expect(
			rulerScoreGroup(new TrajectoryGroup([game(0.2, 0, 'FAIL')]), { judge: options })
		).rejects.toBeInstanceOf(JudgeReplyError);
		const withSub = game(0.5);
		withSub.additionalHistories.push({ messagesAndChoices: [BOARD] });
		await expect(
			rulerScoreGroup(new TrajectoryGroup([game(0.1), withSub]), {
				judge: options,
				swallowExceptions: true,
				...quiet
			})
		).rejects.toThrow(RulerInputError);
		await expect(
			rulerScoreGroup(new TrajectoryGroup([game(0.1), withSub]), { judge: options })
		).rejects.toThrow(/trajectory 2 has 1 additional histories/);
	});

	it('caps requests in flight across groups sharing a judge', async () => {
		judge.reset();
		judge.delayMs = 40;
		const shared = { ...options, concurrency: 2 };
		const groups = Array.from(
			{ length: 6 },
			(_, g) => new TrajectoryGroup([game(0.1 * g), game(0.05 * g + 0.5)])
		);
		const scored = await Promise.all(groups.map((g) => rulerScoreGroup(g, { judge: shared })));
		expect(scored.map((g) => g!.trajectories[0].reward)).toEqual(groups.map((_, g) => 0.1 * g));
		expect(judge.seen).toHaveLength(6);
		expect(judge.peakInFlight).toBe(2);
	});

	it('combine: ruler+env adds the environment reward; a function mixes as it likes', async () => {
		const group = new TrajectoryGroup([game(0.9, 1), game(0.2, 0)]);
		const summed = await rulerScoreGroup(group, { judge: options, combine: 'ruler+env' });
		expect(summed!.trajectories.map((t) => t.reward)).toEqual([1.9, 0.2]);
		expect(summed!.trajectories.map((t) => t.metrics.ruler_score)).toEqual([0.9, 0.2]);
		const mixed = await rulerScoreGroup(group, {
			judge: options,
			combine: (score, env) => 0.5 * score + 0.5 * env
		});
		expect(mixed!.trajectories.map((t) => t.reward)).toEqual([0.95, 0.1]);
		await expect(
			rulerScoreGroup(group, { judge: options, combine: 'env' as never })
		).rejects.toThrow(RulerOptionsError);
	});

	it('a judge given as a client: the official client, or any object with create()', async () => {
		const client = new OpenAI({ baseURL: judge.url, apiKey: 'sk-client', maxRetries: 0 });
		const scores = await ruler(
			[game(0.25), game(0.75)].map((t) => t.messages()),
			{
				judge: { client, model: 'judge-2' }
			}
		);
		expect(scores.map((s) => s.score)).toEqual([0.25, 0.75]);
		expect(judge.seen[0].authorization).toBe('Bearer sk-client');
		expect(judge.seen[0].body.model).toBe('judge-2');

		// In process, as the local engine's openaiClient() will be: no HTTP at all.
		const asked: unknown[] = [];
		const local: JudgeClient = {
			chat: {
				completions: {
					create: async (body) => {
						asked.push(body);
						return completion(
							JSON.stringify({
								scores: [
									{ trajectory_id: '2', explanation: 'b', score: 1 },
									{ trajectory_id: '1', explanation: 'a', score: 0 }
								]
							}),
							false
						);
					}
				}
			}
		};
		const j = new Judge({ client: local, model: 'local' });
		const group = await rulerScoreGroup(new TrajectoryGroup([game(0.1), game(0.2)]), {
			judge: j,
			rubric: 'Prefer the second.'
		});
		expect(group!.trajectories.map((t) => t.reward)).toEqual([0, 1]);
		expect(group!.metrics.ruler_judge_prompt_tokens).toBeUndefined(); // no usage reported
		expect(asked).toHaveLength(1);
		expect((asked[0] as { messages: ChatMessage[] }).messages[0].content).toBe(
			judgeSystemPrompt('Prefer the second.')
		);
		expect(j.stats).toMatchObject({ requests: 1, scored: 1, promptTokens: 0 });
		expect(() => new Judge({ client: {} as JudgeClient, model: 'x' })).toThrow(RulerOptionsError);
		expect(() => new Judge({ baseURL: judge.url, model: 'x', concurrency: 0 })).toThrow(
			/concurrency is 0/
		);
	});

	describe('cli judge', () => {
		const KEY_ENV = 'TABRL_TEST_JUDGE_KEY';
		let groupFile: string;
		beforeAll(async () => {
			groupFile = join(dir, 'group.jsonl');
			// lone trajectories a line (each a group of one): read together as the group
			const lines = [game(0.7), game(0.1), game(0.4)].map((t) =>
				JSON.stringify(trajectoryToJson(t))
			);
			await writeFile(groupFile, lines.join('\n') + '\n');
		});

		it('prints the scores of a JSONL group as one JSON line; the key comes from the env var', async () => {
			process.env[KEY_ENV] = 'sk-from-env';
			const rubric = join(dir, 'rubric.txt');
			await writeFile(rubric, '- Win.\n- Do not lose.\n');
			try {
				const r = await runCli(
					[
						'judge',
						'--base-url',
						judge.url,
						'--model',
						'judge-cli',
						'--group',
						groupFile,
						'--rubric',
						rubric,
						'--api-key-env',
						KEY_ENV
					],
					60_000
				);
				expect(r.stderr).toBe('');
				expect(r.code).toBe(0);
				const lines = r.stdout.trim().split('\n');
				expect(lines).toHaveLength(1);
				expect(JSON.parse(lines[0])).toEqual({
					scores: [
						{ trajectory_id: '1', score: 0.7, explanation: 'trajectory 1 earned 0.7' },
						{ trajectory_id: '2', score: 0.1, explanation: 'trajectory 2 earned 0.1' },
						{ trajectory_id: '3', score: 0.4, explanation: 'trajectory 3 earned 0.4' }
					]
				});
				expect(Object.keys(JSON.parse(lines[0]).scores[0])).toEqual([
					'trajectory_id',
					'score',
					'explanation'
				]);
				expect(judge.seen).toHaveLength(1);
				expect(judge.seen[0].authorization).toBe('Bearer sk-from-env');
				expect(judge.seen[0].body.messages[0].content).toBe(
					judgeSystemPrompt('- Win.\n- Do not lose.\n')
				);
			} finally {
				delete process.env[KEY_ENV];
			}
		});

		it('bad input: usage errors exit 2, an unset key variable or a failing judge exit 1', async () => {
			const base = ['judge', '--base-url', judge.url, '--model', 'm'];
			const [noGroup, argvKey, unset, missing] = await Promise.all([
				runCli(base, 60_000),
				runCli([...base, '--group', groupFile, '--api-key', 'sk-x'], 60_000),
				runCli([...base, '--group', groupFile, '--api-key-env', 'TABRL_TEST_UNSET_VAR'], 60_000),
				runCli([...base, '--group', join(dir, 'none.jsonl')], 60_000)
			]);
			expect(noGroup.code).toBe(2);
			expect(noGroup.stderr).toMatch(/--group is required\nusage: npm run -s cli -- judge/);
			expect(argvKey.code).toBe(2);
			expect(argvKey.stderr).toMatch(/Unknown option '--api-key'/);
			expect(unset.code).toBe(1);
			expect(unset.stderr).toMatch(
				/^tabrl: input: --api-key-env: the environment variable TABRL_TEST_UNSET_VAR is not set/
			);
			expect(missing.code).toBe(1);
			expect(missing.stderr).toMatch(/--group: cannot read/);
			expect(judge.seen).toHaveLength(0);

			judge.reset(() => ok('{"scores": "none"}'));
			const bad = await runCli([...base, '--group', groupFile], 60_000);
			expect(bad.code).toBe(1);
			expect(bad.stdout).toBe('');
			expect(bad.stderr).toMatch(
				/^tabrl: ruler-judge-reply: RULER: the judge 'm' at .* "scores" is the string "none", not an array/
			);
			expect(judge.seen).toHaveLength(2);
		});
	});

	it('debug hands each reply, each refusal and the all-identical warning to a function', async () => {
		judge.reset((seen, n) => (n === 0 ? ok('{"scores": []}') : ok(ruleReply(seen))));
		const lines: string[] = [];
		await ruler(
			[game(0.4), game(0.4)].map((t) => t.messages()),
			{
				judge: options,
				debug: (line) => lines.push(line)
			}
		);
		expect(lines[0]).toMatch(/All 2 trajectories are identical/);
		expect(lines[1]).toBe('[RULER] judge reply 1:\n{"scores": []}');
		expect(lines[2]).toMatch(
			/reply 1 refused: expected exactly 1 score \(one per trajectory\), got 0/
		);
		expect(lines[3]).toMatch(/^\[RULER\] judge reply 2:\n\{"scores"/);
		expect(lines).toHaveLength(4);
	});

	it('checkReply: a cut reply, a refusal, items that are not objects', () => {
		const ids = ['1', '2'];
		const cut = checkReply('{"scores": [{"trajectory_id": "1", "expl', ids, {
			finishReason: 'length'
		});
		expect(cut).toEqual({
			ok: false,
			problems: [expect.stringMatching(/cut off at the token limit \(finish_reason "length"\)/)]
		});
		expect(checkReply(null, ids, { refusal: 'I will not grade.' })).toEqual({
			ok: false,
			problems: ['the judge refused: "I will not grade."']
		});
		expect(checkReply('[1]', ids)).toEqual({
			ok: false,
			problems: ['the reply is an array, not a JSON object with "scores"']
		});
		const items = checkReply('{"scores": [3, {"trajectory_id": "2", "score": 1}]}', ids);
		expect(items.ok || items.problems).toEqual([
			'scores[0] is the number 3, not an object',
			'scores[1] (trajectory 2) has no "explanation"',
			'no score for trajectory id 1'
		]);
		const good = checkReply(
			' {"scores": [{"trajectory_id": "2", "explanation": "b", "score": 1}, {"trajectory_id": "1", "explanation": "a", "score": 0, "extra": true}]}\n',
			ids
		);
		expect(good.ok && [...good.scores.keys()]).toEqual(['2', '1']);
	});

	it('the default rubric is what the prompt carries when none is given', () => {
		expect(judgeSystemPrompt()).toBe(judgeSystemPrompt(DEFAULT_RUBRIC));
	});
});
