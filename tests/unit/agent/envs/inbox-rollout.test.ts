/**
 * The inbox rollout end to end with scripted players behind policyClient (no model): the
 * expert's whole episode (requests, history, tools, reward, metrics), random play, the
 * accuracy gap between them, demonstrations, and the replay.
 */
import type OpenAI from 'openai';
import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import { describe, expect, it } from 'vitest';
import {
	demonstrations,
	demonstrationSeeds,
	expertPolicy,
	questionKeywords,
	randomPolicy,
	replay,
	rollout,
	scenario,
	SYSTEM_PROMPT,
	TOOLS
} from '../../../../src/lib/agent/envs/inbox';
import { EVAL_SEED } from '../../../../src/lib/agent/envs/seeds';
import { policyClient } from '../../../../src/lib/agent/policy-client';
import { isChoice, Trajectory } from '../../../../src/lib/agent/trajectory';

/** policyClient, recording each request body. */
function recording(client: OpenAI, bodies: ChatCompletionCreateParamsNonStreaming[]): OpenAI {
	const create = (
		body: ChatCompletionCreateParamsNonStreaming,
		options?: { signal?: AbortSignal }
	) => {
		bodies.push(structuredClone(body));
		return client.chat.completions.create(body, options);
	};
	return { chat: { completions: { create } } } as unknown as OpenAI;
}

describe('inbox rollout', () => {
	it("plays the expert's episode: search, read, answer", async () => {
		const seed = 37;
		const s = scenario(seed);
		const bodies: ChatCompletionCreateParamsNonStreaming[] = [];
		const client = recording(policyClient(expertPolicy(s)), bodies);
		const t = await rollout(client, { model: 'm', seed, request: { seed: 100, temperature: 1 } });

		expect(bodies).toHaveLength(3);
		expect(bodies.map((b) => b.seed)).toEqual([100, 101, 102]);
		for (const b of bodies) {
			expect(b.tools).toEqual(TOOLS);
			expect(b.max_completion_tokens).toBe(128);
			expect(b.temperature).toBe(1);
		}
		expect(bodies[0].messages).toEqual([
			{ role: 'system', content: SYSTEM_PROMPT },
			{ role: 'user', content: s.question }
		]);
		// Each request is the history so far: one growing conversation.
		expect(bodies[2].messages).toEqual(t.messages().slice(0, 6));

		expect(t.tools).toEqual(TOOLS);
		const items = t.messagesAndChoices;
		expect(items).toHaveLength(7); // system, user, (choice, tool) x 2, choice
		expect(items.filter(isChoice)).toHaveLength(3);
		const calls = t.choices().map((c) => c.message.tool_calls![0]);
		const fn = (i: number) => (calls[i].type === 'function' ? calls[i].function : null)!;
		expect(fn(0).name).toBe('search_inbox');
		expect(JSON.parse(fn(0).arguments)).toEqual({ keywords: questionKeywords(s.question) });
		expect(JSON.parse(fn(1).arguments)).toEqual({ message_id: s.messageIds[0] });
		expect(JSON.parse(fn(2).arguments)).toEqual({
			answer: s.answer,
			reference_message_ids: s.messageIds
		});
		const email = JSON.parse(t.messages()[5].content as string);
		expect(email.message_id).toBe(s.messageIds[0]);
		expect(email.body).toContain(s.answer);

		expect(t.reward).toBe(1.45);
		expect(t.metrics).toEqual({
			correct: 1,
			answered: 1,
			said_i_dont_know: 0,
			format_error: 0,
			num_turns: 3,
			tool_calls: 3,
			found_email: 1,
			read_email: 1,
			cited_email: 1,
			invalid_read: 0,
			ran_out_of_turns: 0
		});
		expect(t.metadata).toMatchObject({
			environment: 'inbox',
			seed,
			question: s.question,
			expected_answer: s.answer,
			outcome: 'correct',
			final_answer: s.answer
		});
	});

	it('plays a random episode to its end, well-formed', async () => {
		const t = await rollout(policyClient(randomPolicy(5)), { model: 'm', seed: 5 });
		expect(t.metrics.format_error).toBe(0);
		expect(Number(t.metrics.num_turns)).toBeGreaterThanOrEqual(1);
		expect(Number(t.metrics.num_turns)).toBeLessThanOrEqual(6);
		expect(['wrong', 'i_dont_know', 'out_of_turns', 'correct']).toContain(t.metadata.outcome);
		expect(t.reward).toBeGreaterThanOrEqual(-1);
		// The same seeds give the same episode.
		const again = await rollout(policyClient(randomPolicy(5)), { model: 'm', seed: 5 });
		expect(again.messages()).toEqual(t.messages());
	});

	it('gives the expert ~1.0 accuracy and random ~0 on held-out scenarios', async () => {
		const n = 150;
		const score = async (make: (seed: number) => ReturnType<typeof randomPolicy>) => {
			let correct = 0;
			let reward = 0;
			for (let i = 0; i < n; i++) {
				const seed = EVAL_SEED + i;
				const t = await rollout(policyClient(make(seed)), { model: 'm', seed });
				correct += Number(t.metrics.correct);
				reward += t.reward;
			}
			return { accuracy: correct / n, reward: reward / n };
		};
		const expert = await score((seed) => expertPolicy(scenario(seed)));
		const random = await score((seed) => randomPolicy(seed));
		expect(expert.accuracy).toBe(1);
		expect(expert.reward).toBeCloseTo(1.45, 9);
		expect(random.accuracy).toBeLessThan(0.05);
		expect(random.reward).toBeLessThan(0);
	});
});

describe('changes: two-email questions', () => {
	it('the expert reads the email and its change (searching the number the first one gives) and answers the new value, citing both; one that stops at the first email is wrong', async () => {
		const seeds = Array.from({ length: 400 }, (_, i) => EVAL_SEED + i).filter(
			(seed) => scenario(seed, { changes: 1 }).messageIds.length === 2
		);
		expect(seeds.length).toBeGreaterThan(60);
		let followed = 0;
		for (const seed of seeds.slice(0, 60)) {
			const s = scenario(seed, { changes: 1 });
			const t = await rollout(policyClient(expertPolicy(s)), { model: 'm', seed, changes: 1 });
			expect(t.metrics.correct, `seed ${seed}`).toBe(1);
			expect(t.metrics.cited_email).toBe(1);
			expect(t.metadata.reference_message_ids).toBe(s.messageIds.join(' '));
			expect(t.reward).toBeGreaterThan(1);
			const searches = t
				.messages()
				.flatMap((m) => ('tool_calls' in m ? (m.tool_calls ?? []) : []))
				.filter((c) => c.type === 'function' && c.function.name === 'search_inbox')
				.map((c) => c.type === 'function' && JSON.parse(c.function.arguments));
			expect(searches[0]).toEqual({ keywords: questionKeywords(s.question) });
			if (s.followUp) {
				// search, read, search the number, read the change, answer
				followed++;
				expect(searches).toEqual([searches[0], { keywords: [s.followUp] }]);
				expect(Number(t.metrics.num_turns)).toBe(5);
			} else expect(Number(t.metrics.num_turns)).toBeLessThanOrEqual(5);
			// the expert of the question without changes reads the first email only: its (old)
			// value is now wrong
			const stale = await rollout(policyClient(expertPolicy(scenario(seed))), {
				model: 'm',
				seed,
				changes: 1
			});
			expect(stale.metrics.correct).toBe(0);
			expect(stale.metadata.outcome).toBe('wrong');
			expect(stale.reward).toBeLessThan(0);
		}
		expect(followed).toBeGreaterThan(5);
	});

	it('readEveryChange: the expert reads the change of the asked email whatever fact it moves, and still answers right', async () => {
		const seeds = Array.from({ length: 300 }, (_, i) => EVAL_SEED + i);
		let irrelevant = 0;
		for (const seed of seeds) {
			const s = scenario(seed, { changes: 1 });
			if (!s.changedBy) continue;
			const t = await rollout(policyClient(expertPolicy(s, { readEveryChange: true })), {
				model: 'm',
				seed,
				changes: 1
			});
			expect(t.metrics.correct, `seed ${seed}`).toBe(1);
			expect(t.metrics.cited_email).toBe(1);
			// both emails read and cited, whether the change moved the asked fact or another
			expect(t.metadata.reference_message_ids).toBe(`${s.messageIds[0]} ${s.changedBy.id}`);
			if (s.messageIds.length === 1) {
				irrelevant++;
				// the expert as shipped reads the asked email only there
				const plain = await rollout(policyClient(expertPolicy(s)), {
					model: 'm',
					seed,
					changes: 1
				});
				expect(plain.metadata.reference_message_ids).toBe(s.messageIds[0]);
			} else expect(s.changedBy.id).toBe(s.messageIds[1]);
		}
		expect(irrelevant).toBeGreaterThan(20);
		// a question on an email that nothing changes has no changedBy (invoices never change)
		const unchanged = seeds.map((seed) => scenario(seed, { changes: 1 })).find((s) => !s.changedBy);
		expect(unchanged?.kind).toBe('invoice');
	});

	it('demonstrations with changes are the expert solving them; without, they are as before', async () => {
		const demos = await demonstrations(40, 3, { changes: 1 });
		expect(demos.every((t) => t.metrics.correct === 1)).toBe(true);
		expect(demos.some((t) => String(t.metadata.expected_message_ids).includes(' '))).toBe(true);
		const plain = await demonstrations(5, 3);
		expect(plain.map((t) => t.metadata.question)).toEqual(
			demos.slice(0, 5).map((t) => t.metadata.question)
		);
		expect(plain.every((t) => !String(t.metadata.expected_message_ids).includes(' '))).toBe(true);
	});
});

describe('demonstrations', () => {
	it('are expert episodes on training seeds only', async () => {
		const demos = await demonstrations(5, 2);
		expect(demos).toHaveLength(5);
		expect(demos.map((t) => t.metadata.seed)).toEqual(demonstrationSeeds(5, 2));
		for (const t of demos) {
			expect(t.metrics.correct).toBe(1);
			expect(t.metadata.source).toBe('expert');
			expect(Number(t.metadata.seed)).toBeLessThan(EVAL_SEED);
		}
		expect(() => demonstrationSeeds(10, 900)).toThrow(RangeError);
	});
});

describe('replay', () => {
	it('shows the question, each call and result, and the outcome', async () => {
		const s = scenario(12);
		const t = await rollout(policyClient(expertPolicy(s)), { model: 'm', seed: 12 });
		const items = replay(t);
		expect(items.map((i) => i.kind)).toEqual([
			'message',
			'tool-call',
			'tool-result',
			'tool-call',
			'tool-result',
			'tool-call',
			'outcome'
		]);
		expect(items[0]).toEqual({ kind: 'message', role: 'user', text: s.question });
		expect(items[1]).toMatchObject({ kind: 'tool-call', name: 'search_inbox' });
		expect(items[2]).toMatchObject({ kind: 'tool-result', name: 'search_inbox' });
		expect(items[4]).toMatchObject({ kind: 'tool-result', name: 'read_email' });
		expect((items[4] as { text: string }).text).toContain(s.answer);
		const outcome = items[6] as { kind: 'outcome'; text: string; reward: number };
		expect(outcome.reward).toBe(1.45);
		expect(outcome.text).toBe(
			`Right: ${JSON.stringify(s.answer)}, citing ${s.messageIds[0]} (expected ${JSON.stringify(s.answer)} in ${s.messageIds[0]}).`
		);
		// A pure function of the data: the same from a JSON copy.
		expect(replay(new Trajectory(JSON.parse(JSON.stringify(t))))).toEqual(items);
	});

	it('shows a reply without a tool call and the format error', async () => {
		const t = await rollout(
			policyClient(() => ({ content: 'hello' })),
			{ model: 'm', seed: 3 }
		);
		const items = replay(t);
		expect(items).toEqual([
			{ kind: 'message', role: 'user', text: scenario(3).question },
			{ kind: 'message', role: 'assistant', text: 'hello' },
			{
				kind: 'outcome',
				text: `Format error (no_tool_call); expected ${JSON.stringify(scenario(3).answer)}.`,
				reward: -1.9
			}
		]);
	});
});
