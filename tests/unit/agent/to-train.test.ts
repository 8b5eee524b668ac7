/**
 * The training view (src/lib/agent/to-train.ts): sequences of prompt + sampled ids, the
 * mask on the model's own tokens only, rollout logprobs aligned (NaN elsewhere); multi-turn
 * chained into one sequence when each prompt continues the tokens before it verbatim
 * (ART's tokenize_vllm_trajectory_histories), split where it does not; additional
 * histories with the trajectory's advantage; typed errors. The last test checks the
 * chaining on the real tiny tokenizer's ChatML template (no GPU).
 */
import { describe, expect, it } from 'vitest';
import {
	AgentError,
	ChoiceTokensError,
	InvalidAdvantageError,
	NoTrainableChoiceError
} from '../../../src/lib/agent/errors';
import {
	groupsToSequences,
	trajectoryToSequences,
	type TrainSequence
} from '../../../src/lib/agent/to-train';
import {
	Trajectory,
	TrajectoryGroup,
	type Choice,
	type MessageOrChoice
} from '../../../src/lib/agent/trajectory';
import type { ChatMessage } from '../../../src/lib/model/tokenizer/chat-messages';
import { tinyTokenizer } from '../../../src/lib/testing/tiny-tokenizer';
import { Tokenizer } from '../../../src/lib/model/tokenizer/tokenizer';
import { choice, system, user } from './trajectory-fixtures';

const traj = (items: MessageOrChoice[], more: Partial<Trajectory> = {}) =>
	new Trajectory({ messagesAndChoices: items, reward: 1, ...more });

/** The sequence as plain arrays (NaN kept as NaN; toEqual treats NaN as equal to NaN). */
const plain = (s: TrainSequence) => ({
	ids: s.ids,
	mask: Array.from(s.trainMask),
	logprobs: Array.from(s.rolloutLogprobs, (v) => (Number.isNaN(v) ? NaN : +v.toFixed(6)))
});

/** Every trained token in sequence order must be every choice's ids in trajectory order. */
function expectTrainsEachChoiceOnce(t: Trajectory, seqs: TrainSequence[]) {
	const trained = seqs.flatMap((s) => s.ids.filter((_, k) => s.trainMask[k]));
	expect(trained).toEqual(t.choices().flatMap((c) => c.tabrl!.ids));
	for (const s of seqs)
		for (const span of s.spans) {
			const c = t.histories()[span.history].messagesAndChoices[span.item] as Choice;
			expect(s.ids.slice(span.start, span.start + span.length)).toEqual(c.tabrl!.ids);
			expect(Array.from(s.rolloutLogprobs.slice(span.start, span.start + span.length))).toEqual(
				Array.from(Float32Array.from(c.tabrl!.logprobs))
			);
		}
}

describe('trajectoryToSequences', () => {
	it('one turn: prompt as context, the sampled ids trained with their logprobs', () => {
		const t = traj([system('s'), user('u'), choice([1, 2, 3], [4, 5])]);
		const [s, ...rest] = trajectoryToSequences(t, { advantage: 0.75 });
		expect(rest).toEqual([]);
		expect(plain(s)).toEqual({
			ids: [1, 2, 3, 4, 5],
			mask: [0, 0, 0, 1, 1],
			logprobs: [NaN, NaN, NaN, -0.1, -0.2]
		});
		expect(s.advantage).toBe(0.75);
		expect(s.spans).toEqual([{ history: 0, item: 2, start: 3, length: 2 }]);
		expect(s.trainMask).toBeInstanceOf(Uint8Array);
		expect(s.rolloutLogprobs).toBeInstanceOf(Float32Array);
	});

	it('multi-turn with consistent prefixes: one sequence, every turn of the model trained once', () => {
		const t = traj([
			user('u1'),
			choice([1, 2], [3, 4]),
			user('u2'),
			choice([1, 2, 3, 4, 5, 6], [7]),
			user('u3'),
			choice([1, 2, 3, 4, 5, 6, 7, 8], [9, 10])
		]);
		const seqs = trajectoryToSequences(t, { advantage: 1 });
		expect(seqs.map(plain)).toEqual([
			{
				ids: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
				mask: [0, 0, 1, 1, 0, 0, 1, 0, 1, 1],
				logprobs: [NaN, NaN, -0.1, -0.2, NaN, NaN, -0.1, NaN, -0.1, -0.2]
			}
		]);
		expect(seqs[0].spans.map((s) => [s.item, s.start])).toEqual([
			[1, 2],
			[3, 6],
			[5, 8]
		]);
		expectTrainsEachChoiceOnce(t, seqs);
	});

	it('a prompt that does not continue the tokens verbatim starts a new sequence there', () => {
		// Turn 2's prompt re-rendered turn 1's reply as [3, 9] instead of the sampled [3, 4];
		// turn 3 continues turn 2 exactly.
		const t = traj([
			choice([1, 2], [3, 4]),
			choice([1, 2, 3, 9, 5], [6]),
			choice([1, 2, 3, 9, 5, 6, 7], [8])
		]);
		const seqs = trajectoryToSequences(t, { advantage: 1 });
		expect(seqs.map(plain)).toEqual([
			{ ids: [1, 2, 3, 4], mask: [0, 0, 1, 1], logprobs: [NaN, NaN, -0.1, -0.2] },
			{
				ids: [1, 2, 3, 9, 5, 6, 7, 8],
				mask: [0, 0, 0, 0, 0, 1, 0, 1],
				logprobs: [NaN, NaN, NaN, NaN, NaN, -0.1, NaN, -0.1]
			}
		]);
		expectTrainsEachChoiceOnce(t, seqs);
	});

	it('a shorter prompt (history compacted) starts a new sequence too', () => {
		const t = traj([choice([1, 2], [3, 4]), choice([1, 2], [5])]);
		expect(trajectoryToSequences(t, { advantage: 1 }).map((s) => s.ids)).toEqual([
			[1, 2, 3, 4],
			[1, 2, 5]
		]);
	});

	it('merge: false gives one sequence per choice', () => {
		const t = traj([choice([1, 2], [3]), choice([1, 2, 3, 4], [5])]);
		const seqs = trajectoryToSequences(t, { advantage: 1, merge: false });
		expect(seqs.map(plain)).toEqual([
			{ ids: [1, 2, 3], mask: [0, 0, 1], logprobs: [NaN, NaN, -0.1] },
			{ ids: [1, 2, 3, 4, 5], mask: [0, 0, 0, 0, 1], logprobs: [NaN, NaN, NaN, NaN, -0.1] }
		]);
		expectTrainsEachChoiceOnce(t, seqs);
	});

	it("additional histories: their own sequences with the trajectory's advantage", () => {
		const t = traj([user('main'), choice([1, 2], [3])], {
			additionalHistories: [
				{
					messagesAndChoices: [
						user('sub-agent'),
						choice([20, 21], [22]),
						choice([20, 21, 22, 23], [24])
					]
				},
				{ messagesAndChoices: [user('no choice here')] }
			]
		});
		const seqs = trajectoryToSequences(t, { advantage: -0.5, groupIndex: 3, trajectoryIndex: 2 });
		expect(seqs.map((s) => s.ids)).toEqual([
			[1, 2, 3],
			[20, 21, 22, 23, 24]
		]);
		expect(seqs.map((s) => s.spans.map((x) => x.history))).toEqual([[0], [1, 1]]);
		for (const s of seqs) {
			expect(s.advantage).toBe(-0.5);
			expect(s.groupIndex).toBe(3);
			expect(s.trajectoryIndex).toBe(2);
		}
		expectTrainsEachChoiceOnce(t, seqs);
	});

	it('an additional history that continues the main one exactly joins it (as in ART)', () => {
		const t = traj([user('first'), choice([1, 2], [3])], {
			additionalHistories: [{ messagesAndChoices: [user('second'), choice([1, 2, 3, 4], [5])] }]
		});
		const seqs = trajectoryToSequences(t, { advantage: 1 });
		expect(seqs.map(plain)).toEqual([
			{ ids: [1, 2, 3, 4, 5], mask: [0, 0, 1, 0, 1], logprobs: [NaN, NaN, -0.1, NaN, -0.1] }
		]);
		expect(seqs[0].spans.map((s) => [s.history, s.start])).toEqual([
			[0, 2],
			[1, 4]
		]);
	});

	it('no choices, no sequences; bad input is a typed error', () => {
		expect(trajectoryToSequences(traj([user('u')]), { advantage: 1 })).toEqual([]);
		const noTokens = { ...choice([1], [2]) } as Choice;
		delete noTokens.tabrl;
		expect(() => trajectoryToSequences(traj([noTokens]), { advantage: 1 })).toThrow(
			ChoiceTokensError
		);
		expect(() => trajectoryToSequences(traj([choice([1], [2])]), { advantage: NaN })).toThrow(
			InvalidAdvantageError
		);
	});
});

describe('groupsToSequences', () => {
	it('labels each sequence with its group, trajectory and advantage; skips empty groups', () => {
		const g0 = new TrajectoryGroup([traj([choice([1], [2])]), traj([choice([1], [3])])]);
		const empty = new TrajectoryGroup([new Error('every rollout failed')]);
		const g2 = new TrajectoryGroup([traj([choice([7], [8]), choice([7, 8, 9], [10])])]);
		const seqs = groupsToSequences([g0, empty, g2], [[0.5, -0.5], [], [0]]);
		expect(seqs.map((s) => [s.groupIndex, s.trajectoryIndex, s.advantage, s.ids])).toEqual([
			[0, 0, 0.5, [1, 2]],
			[0, 1, -0.5, [1, 3]],
			[2, 0, 0, [7, 8, 9, 10]]
		]);
		expect(groupsToSequences([g2], [[1]], { merge: false })).toHaveLength(2);
	});

	it('refuses a group with no choice, and advantages of the wrong shape', () => {
		const textOnly = new TrajectoryGroup([traj([user('u'), { role: 'assistant', content: 'x' }])]);
		expect(() => groupsToSequences([textOnly], [[1]])).toThrow(NoTrainableChoiceError);
		const g = new TrajectoryGroup([traj([choice([1], [2])])]);
		expect(() => groupsToSequences([g], [])).toThrow(AgentError);
		expect(() => groupsToSequences([g], [[1, 2]])).toThrow(/1 trajectories but 2 advantages/);
		const nan = new TrajectoryGroup([traj([choice([1], [2])], { reward: NaN })]);
		expect(() => groupsToSequences([nan], [[0]])).toThrow(/not a finite number/);
	});
});

describe('chaining on a real chat template', () => {
	it("a ChatML conversation's later prompts contain the earlier turns' sampled ids verbatim", () => {
		const files = tinyTokenizer();
		const tok = Tokenizer.fromJson(
			files.tokenizerJson,
			files.tokenizerConfigJson,
			files.chatTemplate
		);
		const end = files.ids.imEnd;
		const messages = [
			system('You are a tic-tac-toe player.'),
			user('   1   2   3\nA  _ | _ | _\n')
		];
		// What an engine would have sampled: the reply's tokens and the end token.
		const reply = '<move>B2</move>';
		const first = choice(tok.encodeChat(messages as ChatMessage[], { addGenerationPrompt: true }), [
			...tok.encode(reply),
			end
		]);
		const next = [
			...messages,
			{ role: 'assistant' as const, content: reply },
			user('   1   2   3\nA  o | _ | _\n')
		];
		const second = choice(tok.encodeChat(next as ChatMessage[], { addGenerationPrompt: true }), [
			...tok.encode('<move>C3</move>'),
			end
		]);
		const t = traj([...messages, first, next[3], second]);
		const seqs = trajectoryToSequences(t, { advantage: 1 });
		expect(seqs).toHaveLength(1);
		expect(seqs[0].ids).toEqual([...second.tabrl!.prompt_ids, ...second.tabrl!.ids]);
		expectTrainsEachChoiceOnce(t, seqs);
		// The template's newline after the end token and the next user turn are context.
		const between = seqs[0].ids.slice(
			seqs[0].spans[0].start + seqs[0].spans[0].length,
			seqs[0].spans[1].start
		);
		expect(tok.decode(between)).toBe(
			'\n<|im_start|>user\n   1   2   3\nA  o | _ | _\n<|im_end|>\n<|im_start|>assistant\n'
		);
	});
});
