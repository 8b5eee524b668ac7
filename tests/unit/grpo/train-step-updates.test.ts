/**
 * Several optimizer updates in one GRPO step (`iterations`, `miniBatches`) on a tiny random
 * Llama on the GPU: each must equal the single-update steps it stands for, made one after
 * the other on a twin model (same weights, same AdamW t), with the step counted once.
 * Weights compared at atol 1e-6 + rtol 1e-4 (f32 sums in the same order); a wrong split,
 * normaliser or AdamW t moves them by ~lr (1e-3).
 */
import { describe, expect, it } from 'vitest';
import { MemoryWeightSource, randomWeights } from '../../../src/lib/testing/random-weights';
import { TransformerModel } from '../../../src/lib/model/transformer/transformer';
import { GrpoConfigError } from '../../../src/lib/grpo/errors';
import { LoraOptimizer } from '../../../src/lib/grpo/optimizer';
import type { TrainSequence } from '../../../src/lib/grpo/pack';
import { grpoStep } from '../../../src/lib/grpo/train-step';
import { useGpu } from '../../helpers/gpu';
import { TINY, randomSequences } from '../model/tiny-models';

const config = TINY.llama;

describe('grpoStep with several updates', () => {
	const gpu = useGpu();

	async function setup() {
		const source = MemoryWeightSource.forConfig(config, randomWeights(config, 2));
		const model = await TransformerModel.create(gpu(), config, source, {
			lora: { rank: 4, alpha: 8 },
			seed: 3
		});
		const optimizer = new LoraOptimizer(gpu(), model.lora!);
		return {
			model,
			optimizer,
			release: () => {
				optimizer.release();
				model.release();
			}
		};
	}

	/** Sequences with their second half trained and the model's own logprobs as rollout's. */
	async function sequences(model: TransformerModel, advantages: number[]) {
		const lengths = advantages.map((_, i) => 6 + ((3 * i) % 5));
		const ids = randomSequences(config.vocabSize, lengths, 9);
		const { logprobs, T } = await model.scoreTokens(ids);
		return ids.map((s, b): TrainSequence => {
			const mask = s.map((_, i) => (i >= Math.floor(s.length / 2) ? 1 : 0));
			const rollout = s.map((_, i) => (mask[i] ? logprobs[b * (T - 1) + i - 1] : null));
			return { ids: s, trainMask: mask, rolloutLogprobs: rollout, advantage: advantages[b] };
		});
	}

	async function expectSameWeights(a: TransformerModel, b: TransformerModel) {
		const pb = await b.lora!.read();
		let moved = 0;
		for (const [name, v] of await a.lora!.read()) {
			expect(v, name).toBeAllclose(pb.get(name)!, { atol: 1e-6, rtol: 1e-4 });
			moved = Math.max(moved, ...v.map(Math.abs));
		}
		expect(moved).toBeGreaterThan(1e-4); // the updates did move the adapter
	}

	it('iterations: 2 is two steps on the same games, counted as one step', async () => {
		const a = await setup();
		const b = await setup();
		const seqs = await sequences(a.model, [1, -1, 0.5, -0.5]);
		const r = await grpoStep(a.model, a.optimizer, seqs, { lr: 1e-3, iterations: 2 });
		const b1 = await grpoStep(b.model, b.optimizer, seqs, { lr: 1e-3 });
		const b2 = await grpoStep(b.model, b.optimizer, seqs, { lr: 1e-3 });
		if (r.skipped || b1.skipped || b2.skipped) throw new Error('skipped');
		expect(r.metrics).toMatchObject({ step: 1, updates: 2, sequences: 4, microBatches: 1 });
		// one pass's tokens; the loss and ratio means of the two updates together
		expect(r.metrics.tokens).toBe(b1.metrics.tokens);
		expect(r.metrics.loss).toBeCloseTo((b1.metrics.loss + b2.metrics.loss) / 2, 5);
		expect(r.metrics.ratioMean).toBeCloseTo((b1.metrics.ratioMean + b2.metrics.ratioMean) / 2, 5);
		// the second pass sees the moved policy: ratios leave 1
		expect(Math.abs(r.metrics.ratioMean - 1)).toBeGreaterThan(1e-6);
		expect([a.optimizer.step, a.optimizer.updates]).toEqual([1, 2]);
		expect([b.optimizer.step, b.optimizer.updates]).toEqual([2, 2]);
		await expectSameWeights(a.model, b.model);
		a.release();
		b.release();
	});

	it('miniBatches: 2 is one step on each half of the games, in order', async () => {
		const a = await setup();
		const b = await setup();
		const seqs = await sequences(a.model, [1, -1, 0, 0.5, -0.5]);
		const signal = seqs.filter((s) => s.advantage !== 0);
		const r = await grpoStep(a.model, a.optimizer, seqs, { lr: 1e-3, miniBatches: 2 });
		await grpoStep(b.model, b.optimizer, signal.slice(0, 2), { lr: 1e-3 });
		await grpoStep(b.model, b.optimizer, signal.slice(2), { lr: 1e-3 });
		if (r.skipped) throw new Error('skipped');
		expect(r.metrics).toMatchObject({ step: 1, updates: 2, droppedZeroAdvantage: 1 });
		expect(r.metrics.microBatches).toBe(2);
		expect(r.metrics.sequences).toBe(5);
		await expectSameWeights(a.model, b.model);
		a.release();
		b.release();
	});

	it('scores the reference once per micro-batch, however many passes', async () => {
		const a = await setup();
		const seqs = await sequences(a.model, [1, -1]);
		let scored = 0;
		const score = a.model.scoreTokens.bind(a.model);
		a.model.scoreTokens = (...args) => (scored++, score(...args));
		const r = await grpoStep(a.model, a.optimizer, seqs, { lr: 1e-3, klBeta: 0.1, iterations: 3 });
		if (r.skipped) throw new Error('skipped');
		expect(scored).toBe(1);
		expect(r.metrics.updates).toBe(3);
		expect(r.metrics.klMean!).toBeGreaterThan(0); // later passes moved away from the base
		a.release();
	});

	it('refuses counts outside 1-64', async () => {
		const a = await setup();
		const seqs = await sequences(a.model, [1, -1]);
		for (const bad of [{ iterations: 0 }, { miniBatches: 65 }, { iterations: 1.5 }])
			await expect(grpoStep(a.model, a.optimizer, seqs, bad)).rejects.toThrow(GrpoConfigError);
		expect(a.optimizer.updates).toBe(0);
		a.release();
	});
});
