/**
 * The inbox episode's rules on bad input (src/lib/agent/envs/inbox/episode.ts), each through the
 * real rollout with a scripted reply sequence behind policyClient: what ends the episode
 * with which format error, what becomes an error text, and the rewards by hand.
 */
import type { ChatCompletionToolMessageParam } from 'openai/resources/chat/completions';
import { describe, expect, it } from 'vitest';
import {
	checkCall,
	questionKeywords,
	rollout,
	scenario,
	type Scenario
} from '../../../../src/lib/agent/envs/inbox';
import { policyClient, type PolicyReply } from '../../../../src/lib/agent/policy-client';
import { isChoice, type Trajectory } from '../../../../src/lib/agent/trajectory';

const SEED = 21;
const s: Scenario = scenario(SEED);
const id = s.messageIds[0];

const call = (name: string, args: unknown): PolicyReply => ({
	toolCalls: [{ name, arguments: typeof args === 'string' ? args : JSON.stringify(args) }]
});
const search = call('search_inbox', { keywords: questionKeywords(s.question) });
const read = (messageId = id) => call('read_email', { message_id: messageId });
const answer = (a: string, refs: string[] = [id]) =>
	call('return_final_answer', { answer: a, reference_message_ids: refs });

/** Plays `replies` in order (a test fails if the rollout asks for more). */
async function play(replies: PolicyReply[], maxTurns?: number): Promise<Trajectory> {
	let i = 0;
	const client = policyClient(() => {
		if (i >= replies.length) throw new Error('the rollout asked for one reply too many');
		return replies[i++];
	});
	const t = await rollout(client, { model: 'script', seed: SEED, maxTurns });
	expect(i).toBe(replies.length);
	return t;
}

const toolMessages = (t: Trajectory) =>
	t.messagesAndChoices.filter(
		(m): m is ChatCompletionToolMessageParam => !isChoice(m) && m.role === 'tool'
	);

describe('inbox rules', () => {
	it('ends on a reply without a tool call: no_tool_call, -2 + 0.1', async () => {
		const t = await play([{ content: `The answer is ${s.answer}.` }]);
		expect(t.metadata.outcome).toBe('format_error');
		expect(t.metadata.format_error).toBe('no_tool_call');
		expect(t.metrics.format_error).toBe(1);
		expect(t.metrics.correct).toBe(0);
		expect(t.reward).toBe(-1.9);
		expect(t.messagesAndChoices).toHaveLength(3);
	});

	it('ends on an unknown tool: unknown_tool, -1.9 + partial', async () => {
		const t = await play([search, call('delete_email', { message_id: id })]);
		expect(t.metadata.format_error).toBe('unknown_tool');
		expect(t.metrics.num_turns).toBe(2);
		expect(t.metrics.tool_calls).toBe(2);
		expect(t.metrics.found_email).toBe(1);
		expect(t.reward).toBe(-1.7); // -1.9 + found 0.1 + no invalid read 0.1
	});

	it('ends on malformed JSON arguments: bad_arguments, -1.8 + 0.1', async () => {
		const t = await play([call('search_inbox', '{"keywords": ["flight"')]);
		expect(t.metadata.format_error).toBe('bad_arguments');
		expect(t.reward).toBe(-1.7);
		expect(t.logs.join('\n')).toContain('not JSON');
	});

	it('ends on missing or ill-typed arguments: bad_arguments', async () => {
		for (const bad of [
			call('read_email', {}),
			call('read_email', { message_id: 1234 }),
			call('search_inbox', { keywords: 'flight' }),
			call('search_inbox', { keywords: ['flight', 3] }),
			call('return_final_answer', { answer: s.answer }),
			call('return_final_answer', { answer: 7, reference_message_ids: [] }),
			call('search_inbox', '["flight"]')
		]) {
			const t = await play([bad]);
			expect(t.metadata.format_error).toBe('bad_arguments');
			expect(t.reward).toBe(-1.7);
		}
		// Extra properties are ignored.
		expect(checkCall('read_email', JSON.stringify({ message_id: id, why: 'x' })).ok).toBe(true);
	});

	it('answers an unknown email id with an error text and goes on', async () => {
		const t = await play([read('m0000'), search, read(), answer(s.answer)]);
		const results = toolMessages(t);
		expect(results).toHaveLength(3);
		expect(JSON.parse(results[0].content as string)).toEqual({ error: 'no email with id m0000' });
		expect(t.metrics.invalid_read).toBe(1);
		expect(t.metrics.correct).toBe(1);
		expect(t.metrics.format_error).toBe(0);
		// Right, cited, 4 turns of 6: 1 + 0.3 + 0.1 + 0.1 * (1 - 4/6).
		expect(t.reward).toBeCloseTo(1.4 + 0.1 / 3, 9);
	});

	it('ends out of turns after maxTurns replies: 0 + partial', async () => {
		const t = await play([search, read(), search], 3);
		expect(t.metadata.outcome).toBe('out_of_turns');
		expect(t.metrics.ran_out_of_turns).toBe(1);
		expect(t.metrics.num_turns).toBe(3);
		expect(t.metrics.answered).toBe(0);
		expect(t.reward).toBe(0.3); // found, read, no invalid read
	});

	it("scores I don't know above a wrong answer", async () => {
		const idk = await play([search, read(), answer("I don't know")]);
		expect(idk.metadata.outcome).toBe('i_dont_know');
		expect(idk.metrics.cited_email).toBe(0);
		expect(idk.reward).toBe(0.3);
		const wrong = await play([search, read(), answer('Nowhere')]);
		expect(wrong.metadata.outcome).toBe('wrong');
		expect(wrong.metrics.answered).toBe(1);
		expect(wrong.metrics.cited_email).toBe(1);
		expect(wrong.reward).toBe(-0.6);
	});

	it('runs several calls of one reply in order, each with its tool message', async () => {
		const both: PolicyReply = {
			toolCalls: [
				{
					name: 'search_inbox',
					arguments: JSON.stringify({ keywords: questionKeywords(s.question) })
				},
				{ name: 'read_email', arguments: JSON.stringify({ message_id: id }) }
			]
		};
		const t = await play([both, answer(s.answer)]);
		const results = toolMessages(t);
		expect(results).toHaveLength(2);
		const choice = t.messagesAndChoices.find(isChoice)!;
		expect(results.map((m) => m.tool_call_id)).toEqual(choice.message.tool_calls!.map((c) => c.id));
		expect(t.metrics.tool_calls).toBe(3);
		expect(t.reward).toBeCloseTo(1.4 + 0.1 * (1 - 2 / 6), 9);
	});

	it('stops a reply at return_final_answer; later calls are not run', async () => {
		const t = await play([
			{
				toolCalls: [
					{
						name: 'return_final_answer',
						arguments: JSON.stringify({ answer: s.answer, reference_message_ids: [id] })
					},
					{ name: 'no_such_tool', arguments: '{}' }
				]
			}
		]);
		expect(t.metadata.outcome).toBe('correct');
		expect(t.metrics.tool_calls).toBe(1);
		expect(t.metrics.format_error).toBe(0);
	});
});
