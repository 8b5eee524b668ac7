/**
 * Trajectory and TrajectoryGroup (src/lib/agent/trajectory.ts) and their validation
 * (validate.ts): ART's defaults, choices told apart from messages, messages() for the next
 * request, captured exceptions, and each typed error for bad input.
 */
import { describe, expect, it } from 'vitest';
import {
	AgentError,
	ChoiceTokensError,
	NoTrainableChoiceError,
	NonFiniteRewardError
} from '../../../src/lib/agent/errors';
import {
	Trajectory,
	TrajectoryGroup,
	captureException,
	isChoice,
	type Choice
} from '../../../src/lib/agent/trajectory';
import {
	choiceTokensProblem,
	validateGroup,
	validateTrajectory
} from '../../../src/lib/agent/validate';
import { choice, system, user } from './trajectory-fixtures';

describe('Trajectory', () => {
	it("has ART's defaults", () => {
		const t = new Trajectory();
		expect(t.messagesAndChoices).toEqual([]);
		expect(t.tools).toBeNull();
		expect(t.additionalHistories).toEqual([]);
		expect(t.reward).toBe(0);
		expect(t.metrics).toEqual({});
		expect(t.metadata).toEqual({});
		expect(t.logs).toEqual([]);
	});

	it('tells choices from messages, including an assistant message written by hand', () => {
		const c = choice([1], [2]);
		expect(isChoice(c)).toBe(true);
		expect(isChoice(user('hi'))).toBe(false);
		expect(isChoice({ role: 'assistant', content: 'by hand' })).toBe(false);
		expect(isChoice({ role: 'tool', content: 'x', tool_call_id: 'call_1' })).toBe(false);
	});

	it('messages() turns choices into assistant messages, tool calls kept', () => {
		const call = {
			id: 'call_1',
			type: 'function' as const,
			function: { name: 'f', arguments: '{}' }
		};
		const withTool: Choice = {
			...choice([1], [2]),
			finish_reason: 'tool_calls',
			message: { role: 'assistant', content: null, refusal: null, tool_calls: [call] }
		};
		const t = new Trajectory({
			messagesAndChoices: [system('s'), user('u'), choice([1], [2], 'first'), user('v'), withTool]
		});
		expect(t.messages()).toEqual([
			system('s'),
			user('u'),
			{ role: 'assistant', content: 'first' },
			user('v'),
			{ role: 'assistant', content: null, tool_calls: [call] }
		]);
		// The history itself is untouched: the choices stay choices.
		expect(t.messagesAndChoices.filter(isChoice)).toHaveLength(2);
	});

	it('histories() and choices() cover the additional histories in order', () => {
		const a = choice([1], [2]);
		const b = choice([5], [6]);
		const c = choice([7], [8]);
		const t = new Trajectory({
			messagesAndChoices: [user('u'), a],
			tools: [{ type: 'function', function: { name: 'f' } }],
			additionalHistories: [{ messagesAndChoices: [user('sub'), b, c] }]
		});
		expect(t.histories()).toHaveLength(2);
		expect(t.histories()[0].tools).toEqual(t.tools);
		expect(t.choices()).toEqual([a, b, c]);
	});

	it('log() appends; finish() records the duration in seconds', () => {
		const t = new Trajectory();
		t.log('one');
		t.log('two');
		expect(t.logs).toEqual(['one', 'two']);
		t.finish();
		expect(t.metrics.duration).toBeGreaterThanOrEqual(0);
		expect(t.metrics.duration).toBeLessThan(60);
	});

	it('survives structured cloning as plain data', () => {
		const t = new Trajectory({ messagesAndChoices: [user('u'), choice([1], [2])], reward: 1 });
		t.metrics.win = 1;
		const back = new Trajectory(structuredClone(t));
		expect(back.messagesAndChoices).toEqual(t.messagesAndChoices);
		expect(back.reward).toBe(1);
		expect(back.metrics).toEqual({ win: 1 });
		expect(back.messages()).toEqual(t.messages());
	});
});

describe('TrajectoryGroup', () => {
	it('splits trajectories from errors and captures the errors as data', () => {
		const a = new Trajectory({ reward: 1 });
		const b = new Trajectory({ reward: 0 });
		const g = new TrajectoryGroup([a, new RangeError('bad move'), b], {
			exceptions: ['plain string', { type: 'X', message: 'm', traceback: 't' }],
			metadata: { scenario: 3 }
		});
		expect(g.trajectories).toEqual([a, b]);
		expect(g.length).toBe(2);
		expect([...g]).toEqual([a, b]);
		expect(g.exceptions).toHaveLength(3);
		expect(g.exceptions[0].type).toBe('RangeError');
		expect(g.exceptions[0].message).toBe('bad move');
		expect(g.exceptions[0].traceback).toContain('bad move');
		expect(g.exceptions[1]).toEqual({ type: 'string', message: 'plain string', traceback: '' });
		expect(g.exceptions[2]).toEqual({ type: 'X', message: 'm', traceback: 't' });
		expect(g.metadata).toEqual({ scenario: 3 });
		g.log('rescored');
		expect(g.logs).toEqual(['rescored']);
	});

	it('captureException keeps an error subclass name and JSON-safe fields', () => {
		const e = captureException(new NoTrainableChoiceError('group 1'));
		expect(e.type).toBe('NoTrainableChoiceError');
		expect(JSON.parse(JSON.stringify(e))).toEqual(e);
	});
});

describe('validation', () => {
	const good = () =>
		new Trajectory({ messagesAndChoices: [user('u'), choice([1, 2], [3, 4])], reward: 0.5 });

	it('passes a good trajectory and counts its choices over all histories', () => {
		const t = good();
		t.additionalHistories.push({ messagesAndChoices: [choice([9], [10]), choice([9, 10], [11])] });
		expect(validateTrajectory(t)).toBe(3);
	});

	it.each([NaN, Infinity, -Infinity])('a reward of %s is a NonFiniteRewardError', (reward) => {
		const t = good();
		t.reward = reward;
		const g = new TrajectoryGroup([good(), t]);
		const err = (() => {
			try {
				validateGroup(g, 'group 4');
			} catch (e) {
				return e;
			}
		})();
		expect(err).toBeInstanceOf(NonFiniteRewardError);
		expect((err as AgentError).kind).toBe('non-finite-reward');
		expect((err as Error).message).toContain('group 4, trajectory 1');
	});

	it('a choice without tabrl, or with broken token data, is a ChoiceTokensError with its path', () => {
		const cases: [Record<string, unknown> | undefined, RegExp][] = [
			[undefined, /no tabrl record/],
			[{ prompt_ids: [1], ids: [2, 3], logprobs: [-1] }, /2 ids but 1 logprobs/],
			[{ prompt_ids: [1], ids: [2], logprobs: [null] }, /logprobs\[0\] is null/],
			[{ prompt_ids: [1], ids: [2], logprobs: [NaN] }, /logprobs\[0\] is NaN/],
			[{ prompt_ids: [1], ids: [2] }, /logprobs is missing/],
			[{ prompt_ids: [1], ids: [2.5], logprobs: [-1] }, /ids is not an array of token ids/],
			[{ prompt_ids: [], ids: [2], logprobs: [-1] }, /prompt_ids is empty/],
			[{ ids: [2], logprobs: [-1] }, /prompt_ids is not an array/]
		];
		for (const [tabrl, problem] of cases) {
			// Broken on purpose: what JSON or a foreign server might hand over.
			const c = { ...choice([1], [2]), tabrl } as unknown as Choice;
			if (tabrl === undefined) delete c.tabrl;
			expect(choiceTokensProblem(c)).toMatch(problem);
			const t = good();
			t.additionalHistories.push({ messagesAndChoices: [user('x'), c] });
			expect(() => validateTrajectory(t)).toThrow(ChoiceTokensError);
			expect(() => validateTrajectory(t)).toThrow(
				/additionalHistories\[0\]\.messagesAndChoices\[1\]/
			);
		}
	});

	it('a group whose trajectories hold no choice is a NoTrainableChoiceError', () => {
		const onlyText = new Trajectory({
			messagesAndChoices: [user('u'), { role: 'assistant', content: 'typed by hand' }],
			reward: 1
		});
		const g = new TrajectoryGroup([onlyText, new Trajectory({ reward: 0 })]);
		expect(() => validateGroup(g, 'group 0')).toThrow(NoTrainableChoiceError);
		// One trajectory with a choice is enough.
		g.trajectories.push(good());
		expect(validateGroup(g)).toBe(1);
	});

	it('a group with no trajectories (all rollouts failed) has nothing to train and passes', () => {
		expect(validateGroup(new TrajectoryGroup([new Error('rollout failed')]))).toBe(0);
	});
});
