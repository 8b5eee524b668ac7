/**
 * One GRPO / SFT step on a tiny random Llama on the GPU: the update's direction, the
 * no-signal skip, accumulation over micro-batches, the KL term at step 0. Gradients are read
 * after a step at lr 0 (AdamW changes nothing); across micro-batch splits atol 1e-5 of the
 * largest gradient + rtol 1e-4, where a wrong normaliser is off by 10% or more.
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../../../src/lib/util/random';
import { MemoryWeightSource, randomWeights } from '../../../src/lib/testing/random-weights';
import { TransformerModel } from '../../../src/lib/model/transformer/transformer';
import { GrpoConfigError } from '../../../src/lib/grpo/errors';
import { ART_OPTIMIZER_DEFAULTS, LoraOptimizer } from '../../../src/lib/grpo/optimizer';
import type { TrainSequence } from '../../../src/lib/grpo/pack';
import { grpoStep, sftStep, type GrpoStepConfig } from '../../../src/lib/grpo/train-step';
import { useGpu } from '../../helpers/gpu';
import { TINY, randomSequences } from '../model/tiny-models';
import { randomizeLoraB } from '../../helpers/lora';

const config = TINY.llama;

describe('grpoStep / sftStep on a tiny model', () => {
	const gpu = useGpu();

	/** A fresh model (LoRA B = 0, or random B when `randomB`) and its optimizer. */
	async function setup(randomB = false) {
		const source = MemoryWeightSource.forConfig(config, randomWeights(config, 2));
		const model = await TransformerModel.create(gpu(), config, source, {
			lora: { rank: 4, alpha: 8 },
			seed: 3
		});
		if (randomB) await randomizeLoraB(model.lora!, new Rng(77), 0.2);
		const optimizer = new LoraOptimizer(gpu(), model.lora!);
		const release = () => {
			optimizer.release();
			model.release();
		};
		return { model, optimizer, release };
	}

	/** Sequences whose second half is trained, with on-policy rollout logprobs (the model's
	 * own, as sampling would have given them). */
	async function onPolicySequences(
		model: TransformerModel,
		lengths: number[],
		advantages: number[],
		seed = 5
	): Promise<TrainSequence[]> {
		const ids = randomSequences(config.vocabSize, lengths, seed);
		const { logprobs, T } = await model.scoreTokens(ids);
		return ids.map((s, b) => {
			const trained = s.map((_, i) => (i >= Math.floor(s.length / 2) ? 1 : 0));
			const rollout = s.map((_, i) => (trained[i] ? logprobs[b * (T - 1) + i - 1] : null));
			return { ids: s, trainMask: trained, rolloutLogprobs: rollout, advantage: advantages[b] };
		});
	}

	/** Sum of a sequence's trained-token logprobs under the model now. */
	async function trainedLogprob(model: TransformerModel, s: TrainSequence): Promise<number> {
		const { logprobs } = await model.scoreTokens([s.ids as number[]]);
		let sum = 0;
		for (let i = 1; i < s.ids.length; i++) if (s.trainMask[i]) sum += logprobs[i - 1];
		return sum;
	}

	it("ART's optimizer defaults", () => {
		expect(ART_OPTIMIZER_DEFAULTS).toEqual({
			lr: 5e-6,
			beta1: 0.9,
			beta2: 0.99,
			eps: 1e-8,
			weightDecay: 0.1,
			maxGradNorm: 0.1
		});
	});

	for (const [sign, loss] of [
		[1, 'cispo'],
		[-1, 'ppo']
	] as const)
		it(`a ${sign > 0 ? 'positive' : 'negative'} advantage (${loss}) ${sign > 0 ? 'raises' : 'lowers'} the sequence's logprob`, async () => {
			const { model, optimizer, release } = await setup();
			const [s] = await onPolicySequences(model, [10], [sign]);
			const before = await trainedLogprob(model, s);
			const r = await grpoStep(model, optimizer, [s], { loss, lr: 1e-3 });
			expect(r.skipped).toBeUndefined();
			if (r.skipped) return;
			const after = await trainedLogprob(model, s);
			// f32 noise of the sum is ~1e-5; the first AdamW step moves every B entry by ~lr.
			expect(sign * (after - before)).toBeGreaterThan(1e-3);
			expect(r.metrics).toMatchObject({ tokens: 5, sequences: 1, step: 1, microBatches: 1 });
			expect(r.metrics.ratioMean).toBeCloseTo(1, 5); // on-policy
			expect(r.metrics.gradNorm).toBeGreaterThan(0);
			expect(r.metrics.lr).toBe(1e-3);
			expect(optimizer.step).toBe(1);
			release();
		});

	it('a step with nothing to learn is skipped and changes nothing', async () => {
		const { model, optimizer, release } = await setup(true);
		const seqs = await onPolicySequences(model, [6, 8, 5], [0, 0, 0]);
		const params = await model.lora!.read();
		const grads = await model.lora!.readGrads();
		const r = await grpoStep(model, optimizer, seqs, { lr: 1e-2 });
		expect(r).toMatchObject({
			skipped: 'no-signal',
			counts: { sequences: 3, droppedZeroAdvantage: 3, sequencesDropped: 3, microBatches: 0 }
		});
		// Too long for the context: also nothing to learn, with a warning.
		const long = await grpoStep(model, optimizer, [{ ...seqs[1], advantage: 1 }], {
			maxSeqLen: 6
		});
		expect(long.skipped).toBe('no-signal');
		expect(long.warnings).toEqual(['Dropped 1/1 sequences longer than the context (6 tokens).']);
		expect(optimizer.step).toBe(0);
		for (const [name, v] of await model.lora!.read())
			expect(Array.from(v), name).toEqual(Array.from(params.get(name)!));
		for (const [name, v] of await model.lora!.readGrads())
			expect(Array.from(v), name).toEqual(Array.from(grads.get(name)!));
		release();
	});

	for (const aggregation of ['grpo', 'dapo'] as const)
		it(`${aggregation}: accumulation over micro-batches gives the one-batch gradients`, async () => {
			const { model, optimizer, release } = await setup(true);
			// Off-policy rollout logprobs (shifted), so ratios differ from 1 and ppo clips some.
			const seqs = (await onPolicySequences(model, [9, 6, 7, 4], [1.2, -0.8, 0.5, -1])).map(
				(s, k) => ({
					...s,
					rolloutLogprobs: Array.from(s.rolloutLogprobs!, (l) =>
						l === null ? null : l + 0.15 * (k - 1.5)
					)
				})
			);
			const base: GrpoStepConfig = { loss: 'ppo', aggregation, lr: 0 };
			const one = await grpoStep(model, optimizer, seqs, base);
			const g1 = await model.lora!.readGrads();
			const split = await grpoStep(model, optimizer, seqs, { ...base, tokenBudget: 16 });
			const g2 = await model.lora!.readGrads();
			if (one.skipped || split.skipped) throw new Error('skipped');
			expect(one.metrics.microBatches).toBe(1);
			expect(split.metrics.microBatches).toBeGreaterThanOrEqual(3);
			expect(split.metrics.loss).toBeCloseTo(one.metrics.loss, 5);
			expect(split.metrics.tokens).toBe(one.metrics.tokens);
			expect(split.metrics.clipHighFraction + split.metrics.clipLowFraction).toBeGreaterThan(0);
			expect(split.metrics.gradNorm).toBeCloseTo(one.metrics.gradNorm, 5);
			for (const [name, v] of g1) {
				const scale = v.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
				expect(scale, name).toBeGreaterThan(0);
				expect(g2.get(name)!, name).toBeAllclose(v, { atol: 1e-5 * scale, rtol: 1e-4 });
			}
			release();
		});

	it("shared prefixes give the whole sequences' loss, KL and gradients", async () => {
		const { model, optimizer, release } = await setup(true);
		// two system prompts of 6 tokens, continued by 3 and 2 sequences (off-policy logprobs)
		const prompts = randomSequences(config.vocabSize, [6, 6], 31);
		const tails = randomSequences(config.vocabSize, [7, 4, 9, 5, 6], 32);
		const ids = tails.map((t, b) => [...prompts[b % 2], ...t]);
		const { logprobs, T } = await model.scoreTokens(ids);
		const seqs: TrainSequence[] = ids.map((s, b) => ({
			ids: s,
			trainMask: s.map((_, i) => (i >= 8 ? 1 : 0)),
			rolloutLogprobs: s.map((_, i) => (i >= 8 ? logprobs[b * (T - 1) + i - 1] + 0.1 * b : null)),
			advantage: [1, -0.5, 0.7, -1.2, 0.3][b]
		}));
		const base: GrpoStepConfig = { loss: 'ppo', klBeta: 0.3, lr: 0 };
		const whole = await grpoStep(model, optimizer, seqs, { ...base, sharePrefixes: false });
		const gWhole = await model.lora!.readGrads();
		const shared = await grpoStep(model, optimizer, seqs, base);
		const gShared = await model.lora!.readGrads();
		if (whole.skipped || shared.skipped) throw new Error('skipped');
		expect(shared.metrics.tokens).toBe(whole.metrics.tokens);
		expect(shared.metrics.klMean!).toBeGreaterThan(1e-4);
		for (const key of ['loss', 'klMean', 'ratioMean', 'gradNorm'] as const)
			expect(shared.metrics[key], key).toBeCloseTo(whole.metrics[key]!, 5);
		for (const [name, v] of gWhole) {
			const scale = v.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
			expect(gShared.get(name)!, name).toBeAllclose(v, { atol: 1e-5 * scale, rtol: 1e-4 });
		}
		release();
	});

	it('KL with beta > 0 is zero at step 0 (LoRA B = 0: new == ref) and so is its gradient', async () => {
		const { model, optimizer, release } = await setup();
		const seqs = await onPolicySequences(model, [8, 6], [1, -1]);
		const withKl = await grpoStep(model, optimizer, seqs, { klBeta: 0.5, lr: 0 });
		const gKl = await model.lora!.readGrads();
		const noKl = await grpoStep(model, optimizer, seqs, { lr: 0 });
		const g0 = await model.lora!.readGrads();
		if (withKl.skipped || noKl.skipped) throw new Error('skipped');
		expect(withKl.metrics.klMean).toBe(0);
		expect(withKl.metrics.klLoss).toBe(0);
		expect(withKl.metrics.times.referenceMs).toBeGreaterThan(0);
		expect(noKl.metrics.klMean).toBeUndefined();
		for (const [name, v] of g0) expect(Array.from(gKl.get(name)!), name).toEqual(Array.from(v));
		// After a real step the adapted model differs from the base: the KL is positive.
		await grpoStep(model, optimizer, seqs, { lr: 1e-2 });
		const later = await grpoStep(model, optimizer, seqs, { klBeta: 0.5, lr: 0 });
		if (later.skipped) throw new Error('skipped');
		expect(later.metrics.klMean!).toBeGreaterThan(1e-6);
		release();
	});

	it('an SFT step raises the logprob of the trained tokens', async () => {
		const { model, optimizer, release } = await setup();
		const [s] = await onPolicySequences(model, [9], [0]);
		const before = await trainedLogprob(model, s);
		const r = await sftStep(model, optimizer, [s], { lr: 1e-3 });
		if (r.skipped) throw new Error('skipped');
		expect(r.metrics.loss).toBeCloseTo(-before / 5, 4); // mean over 5 trained tokens
		expect(r.metrics.tokens).toBe(5);
		expect(await trainedLogprob(model, s)).toBeGreaterThan(before + 1e-3);
		release();
	});

	it('a step whose gradient norm overflows is refused and changes nothing', async () => {
		// Advantage 1e30: dLogprobs ~1e29 is still a finite f32, but the squared gradients
		// overflow, so the global norm is Inf and AdamW's kernel updates nothing.
		const { model, optimizer, release } = await setup(true);
		const [s] = await onPolicySequences(model, [7], [1e30]);
		const params = await model.lora!.read();
		const r = await grpoStep(model, optimizer, [s], { lr: 1e-2 });
		expect(r.skipped).toBe('non-finite-grad');
		if (r.skipped === 'non-finite-grad') expect(r.optimizer.gradNorm).not.toBeLessThan(Infinity);
		expect(optimizer.step).toBe(0);
		for (const [name, v] of await model.lora!.read())
			expect(Array.from(v), name).toEqual(Array.from(params.get(name)!));
		release();
	});

	it('a model without adapters is a config error', async () => {
		const source = MemoryWeightSource.forConfig(config, randomWeights(config, 2));
		const bare = await TransformerModel.create(gpu(), config, source);
		const { model, optimizer, release } = await setup();
		const seqs = await onPolicySequences(model, [5], [1]);
		await expect(grpoStep(bare, optimizer, seqs)).rejects.toThrow(GrpoConfigError);
		bare.release();
		release();
	});
});
