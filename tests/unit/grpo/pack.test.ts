/**
 * Packing train sequences onto the logprobs grid: alignment (token i's flag and rollout
 * logprob at column i - 1), padding, micro-batches by token budget, drops with warnings,
 * typed errors; and packed micro-batches through lossAndGrad equal one batch.
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../../../src/lib/util/random';
import { toTokenBatch } from '../../../src/lib/model/transformer/batch';
import type { TrainSequence as AgentTrainSequence } from '../../../src/lib/agent/to-train';
import {
	InvalidSequenceError,
	MissingLogprobsError,
	GrpoConfigError
} from '../../../src/lib/grpo/errors';
import { lossAndGrad } from '../../../src/lib/grpo/losses';
import type { Aggregation } from '../../../src/lib/grpo/loss-config';
import { planNormaliser } from '../../../src/lib/grpo/loss-normaliser';
import { addTotals, emptyTotals } from '../../../src/lib/grpo/loss-totals';
import { packSequences, trainedTokenCounts, type TrainSequence } from '../../../src/lib/grpo/pack';

function seq(
	ids: number[],
	trained: number[],
	rollout?: (number | null)[],
	advantage = 1
): TrainSequence {
	return { ids, trainMask: trained, rolloutLogprobs: rollout, advantage };
}

describe('packSequences', () => {
	it('aligns flags and rollout logprobs with the target grid and right-pads', () => {
		const a = seq([5, 6, 7, 8], [0, 0, 1, 1], [null, null, -0.5, -0.25], 2);
		const b = seq([9, 10, 11], [0, 1, 0], [null, -1.5, null], -1);
		const { microBatches, dropped, warnings } = packSequences([b, a], { maxSeqLen: 8 });
		expect(dropped).toEqual([]);
		expect(warnings).toEqual([]);
		expect(microBatches).toHaveLength(1);
		const m = microBatches[0];
		// Longest first: a (input 1) then b (input 0).
		expect(m.sequenceIndex).toEqual([1, 0]);
		expect([m.B, m.T]).toEqual([2, 4]);
		expect(Array.from(m.tokens.ids)).toEqual([5, 6, 7, 8, 9, 10, 11, 0]);
		expect(Array.from(m.tokens.lengths)).toEqual([4, 3]);
		// Grid [2, 3]: column t is the target ids[t + 1].
		//   a: targets 6, 7, 8 -> trained 0, 1, 1; rollout NaN, -0.5, -0.25
		//   b: targets 10, 11, pad -> trained 1, 0, 0; rollout -1.5, NaN, NaN
		expect(Array.from(m.mask)).toEqual([0, 1, 1, 1, 0, 0]);
		expect(Array.from(m.rolloutLogprobs)).toEqual([NaN, -0.5, -0.25, -1.5, NaN, NaN]);
		expect(Array.from(m.advantages)).toEqual([2, -1]);
		expect(m.trainedTokens).toEqual([2, 1]);
		// The model takes `tokens` as it is.
		const tb = toTokenBatch(m.tokens);
		expect([tb.B, tb.T]).toEqual([2, 4]);
	});

	it('sharePrefixes: the rows hold what follows their prefix, the grids shifted by p', () => {
		// [1 2 3] shared by all three; trained from index 4 (p <= 3)
		const a = seq([1, 2, 3, 4, 5, 6], [0, 0, 0, 0, 1, 1], [null, null, null, null, -0.5, -0.25], 2);
		const b = seq([1, 2, 3, 7, 8], [0, 0, 0, 0, 1], [null, null, null, null, -1.5], -1);
		const c = seq([1, 2, 3, 9, 10], [0, 0, 0, 0, 1], [null, null, null, null, -2], 1);
		const whole = packSequences([a, b, c], { maxSeqLen: 8 }).microBatches[0];
		expect(whole.prefix).toBeUndefined();
		const m = packSequences([a, b, c], { maxSeqLen: 8, sharePrefixes: true }).microBatches[0];
		expect(m.prefix).toEqual({
			ids: Uint32Array.from([1, 2, 3]),
			length: 3,
			rowPrefix: Uint32Array.from([0, 0, 0])
		});
		expect([m.B, m.T]).toEqual([3, 3]);
		expect(Array.from(m.tokens.ids)).toEqual([4, 5, 6, 7, 8, 0, 9, 10, 0]);
		expect(Array.from(m.tokens.lengths)).toEqual([3, 2, 2]);
		// row grid column t is the whole sequence's 3 + t: targets ids[4], ids[5]
		expect(Array.from(m.mask)).toEqual([1, 1, 1, 0, 1, 0]);
		expect(Array.from(m.rolloutLogprobs)).toEqual([-0.5, -0.25, -1.5, NaN, -2, NaN]);
		expect(m.trainedTokens).toEqual(whole.trainedTokens);
		expect(Array.from(m.advantages)).toEqual(Array.from(whole.advantages));
	});

	it('splits by the token budget (B x T), longest first; a sequence over the budget alone', () => {
		const lengths = [3, 5, 4, 2, 9];
		const seqs = lengths.map((n) =>
			seq(
				Array.from({ length: n }, (_, i) => i + 1),
				Array.from({ length: n }, (_, i) => (i > 0 ? 1 : 0)),
				Array.from({ length: n }, () => -1)
			)
		);
		// Budget 10: [9] alone (9 <= 10 but 2 x 9 > 10); [5, 4] (2 x 5 = 10); [3, 2] (2 x 3).
		const { microBatches } = packSequences(seqs, { maxSeqLen: 16, tokenBudget: 10 });
		expect(microBatches.map((m) => m.sequenceIndex)).toEqual([[4], [1, 2], [0, 3]]);
		expect(microBatches.map((m) => [m.B, m.T])).toEqual([
			[1, 9],
			[2, 5],
			[2, 3]
		]);
		// Budget 6: the 9-token sequence is over it and still gets a micro-batch of its own.
		const small = packSequences(seqs, { maxSeqLen: 16, tokenBudget: 6 });
		expect(small.microBatches.map((m) => m.sequenceIndex)).toEqual([[4], [1], [2], [0, 3]]);
		// maxRows caps rows whatever the budget.
		const rows = packSequences(seqs, { maxSeqLen: 16, maxRows: 2 });
		expect(rows.microBatches.map((m) => m.B)).toEqual([2, 2, 1]);
		expect(trainedTokenCounts(rows).sort()).toEqual([1, 2, 3, 4, 8]);
	});

	it('drops sequences longer than the context and ones with nothing trained, with warnings', () => {
		const ok = seq([1, 2, 3], [0, 1, 1], [null, -1, -1]);
		const long = seq([1, 2, 3, 4, 5, 6], [0, 1, 1, 1, 1, 1], [null, -1, -1, -1, -1, -1]);
		const none = seq([1, 2, 3], [0, 0, 0]);
		const single = seq([7], [0]);
		const r = packSequences([long, ok, none, single], { maxSeqLen: 5 });
		expect(r.microBatches.flatMap((m) => m.sequenceIndex)).toEqual([1]);
		expect(r.dropped).toEqual([
			{ index: 0, reason: 'too-long', length: 6 },
			{ index: 2, reason: 'no-trained-tokens', length: 3 },
			{ index: 3, reason: 'no-trained-tokens', length: 1 }
		]);
		expect(r.warnings).toEqual([
			'Dropped 1/4 sequences longer than the context (5 tokens).',
			'Dropped 2/4 sequences with no trained token.'
		]);
		// Exactly the context is kept.
		expect(packSequences([long], { maxSeqLen: 6 }).dropped).toEqual([]);
		// Everything dropped: no micro-batch.
		expect(packSequences([long], { maxSeqLen: 5 }).microBatches).toEqual([]);
	});

	it('malformed sequences are typed errors', () => {
		const cases: [TrainSequence, RegExp][] = [
			[seq([1, 2], [1, 1], [-1, -1]), /first token/],
			[seq([1, 2, 3], [0, 1], [null, -1, -1]), /trainMask has 2 flags for 3 ids/],
			[seq([1, 2, 3], [0, 1, 1], [null, -1]), /2 values for 3 ids/],
			[seq([1, 2.5], [0, 1], [null, -1]), /not a token id/],
			[seq([1, -2], [0, 1], [null, -1]), /not a token id/],
			[seq([1, 2], [0, 1], [null, -1], NaN), /advantage is NaN/],
			[seq([1, 2], [0, 1], [null, Infinity]), /rollout logprob at 1 is Infinity/],
			[seq([], []), /no tokens/]
		];
		for (const [s, message] of cases) {
			let caught: unknown;
			try {
				packSequences([seq([1, 2], [0, 1], [null, -1]), s], { maxSeqLen: 8 });
			} catch (e) {
				caught = e;
			}
			expect(caught, String(message)).toBeInstanceOf(InvalidSequenceError);
			expect((caught as InvalidSequenceError).kind).toBe('invalid-sequence');
			expect((caught as Error).message).toMatch(message);
			expect((caught as Error).message).toMatch(/^Train sequence 1:/);
		}
		expect(() => packSequences([], { maxSeqLen: 1 })).toThrow(GrpoConfigError);
		expect(() => packSequences([], { maxSeqLen: 8, tokenBudget: 0 })).toThrow(GrpoConfigError);
	});

	it("the agent layer's TrainSequence (Uint8Array mask, Float32Array with NaN) packs as it is", () => {
		const agent: AgentTrainSequence = {
			ids: [4, 5, 6],
			trainMask: Uint8Array.from([0, 1, 1]),
			rolloutLogprobs: Float32Array.from([NaN, -0.5, -0.25]),
			advantage: 0.5,
			groupIndex: 0,
			trajectoryIndex: 2,
			spans: [{ history: 0, item: 1, start: 1, length: 2 }]
		};
		const asInput: TrainSequence = agent; // compile-time: assignable without conversion
		const m = packSequences([asInput], { maxSeqLen: 8, requireLogprobs: true }).microBatches[0];
		expect(Array.from(m.mask)).toEqual([1, 1]);
		expect(Array.from(m.rolloutLogprobs)).toEqual([-0.5, -0.25]);
		expect(Array.from(m.advantages)).toEqual([0.5]);
		// NaN at a trained token is missing.
		const gap = { ...agent, rolloutLogprobs: Float32Array.from([NaN, NaN, -0.25]) };
		expect(() => packSequences([gap], { maxSeqLen: 8, requireLogprobs: true })).toThrow(
			MissingLogprobsError
		);
	});

	it('requireLogprobs: a trained token without one is a MissingLogprobsError (SFT needs none)', () => {
		const s = seq([1, 2, 3], [0, 1, 1], [null, -1, null]);
		expect(() => packSequences([s], { maxSeqLen: 8, requireLogprobs: true })).toThrow(
			MissingLogprobsError
		);
		const noLogprobs = seq([1, 2, 3], [0, 1, 1]);
		expect(() => packSequences([noLogprobs], { maxSeqLen: 8, requireLogprobs: true })).toThrow(
			MissingLogprobsError
		);
		const r = packSequences([noLogprobs], { maxSeqLen: 8 });
		expect(Array.from(r.microBatches[0].rolloutLogprobs)).toEqual([NaN, NaN]);
	});
});

describe('packed micro-batches through the loss', () => {
	/** A fixed fake "model": the logprob of a target depends only on the sequence, the
	 * position and the token, so every packing sees the same values. */
	function fakeLogprobs(
		seqs: TrainSequence[],
		m: ReturnType<typeof packSequences>['microBatches'][0]
	) {
		const cols = m.T - 1;
		const out = new Float64Array(m.B * cols).fill(NaN);
		m.sequenceIndex.forEach((s, b) => {
			const ids = seqs[s].ids;
			for (let t = 0; t + 1 < ids.length; t++)
				out[b * cols + t] = -0.1 - 0.03 * ((ids[t + 1] * 7 + t * 3 + s) % 50);
		});
		return out;
	}

	for (const aggregation of ['grpo', 'dr_grpo', 'dapo'] as Aggregation[])
		it(`${aggregation}: any split into micro-batches gives the one-batch loss and per-token gradients`, () => {
			const rng = new Rng(5);
			const seqs: TrainSequence[] = [3, 7, 5, 6, 2, 4].map((n, k) => {
				const ids = Array.from({ length: n }, () => rng.int(300));
				const trained = ids.map((_, i) => (i >= Math.floor(n / 2) ? 1 : 0));
				const rollout = ids.map((_, i) => (trained[i] ? -0.2 - 2 * rng.next() : null));
				return { ids, trainMask: trained, rolloutLogprobs: rollout, advantage: k % 2 ? 0.7 : -1.1 };
			});
			const config = { aggregation, loss: 'ppo' as const };
			// Per (sequence, token) gradient from a pack: a map keyed "s:t".
			const run = (tokenBudget?: number) => {
				const pack = packSequences(seqs, { maxSeqLen: 16, tokenBudget });
				const norm = planNormaliser(trainedTokenCounts(pack), config);
				let totals = emptyTotals();
				const grads = new Map<string, number>();
				for (const m of pack.microBatches) {
					const r = lossAndGrad({ ...m, logprobs: fakeLogprobs(seqs, m) }, config, norm);
					totals = addTotals(totals, r.totals);
					const cols = m.T - 1;
					m.sequenceIndex.forEach((s, b) => {
						for (let t = 0; t < cols; t++) grads.set(`${s}:${t}`, r.dLogprobs[b * cols + t]);
					});
				}
				return { n: pack.microBatches.length, totals, grads };
			};
			const one = run();
			const split = run(12);
			expect(one.n).toBe(1);
			expect(split.n).toBeGreaterThan(2);
			expect(split.totals.loss).toBeCloseTo(one.totals.loss, 14);
			expect(split.totals.tokens).toBe(one.totals.tokens);
			expect(one.totals.tokens).toBe(15); // 2 + 4 + 3 + 3 + 1 + 2 trained targets
			for (const [k, g] of one.grads) expect(split.grads.get(k) ?? 0, k).toBe(g);
		});
});
