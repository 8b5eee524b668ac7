/**
 * Top logprobs from generation (GenerateOptions.topLogprobs, gpu/kernels/top-logprobs.ts)
 * against the f64 CPU reference: at every step, the k most likely tokens of
 * log_softmax(logits / T) of the reference forward over the prompt and the tokens sampled so
 * far. Tolerance atol 1e-4 on logprobs (as generation.test.ts: f32 GPU rounding through two
 * layers against f64); ranks compared by value, so a near-tie may swap two ids. The
 * sampled token's logprob (the sampler's own reduction) equals its entry within 1e-5 when
 * it is among the k. Without topLogprobs nothing is computed or returned.
 */
import { describe, expect, it } from 'vitest';
import { Generator, type StepToken } from '../../../src/lib/model/generation';
import { MemoryWeightSource, randomWeights } from '../../../src/lib/testing/random-weights';
import { referenceLogits } from '../../../src/lib/testing/reference';
import { TransformerModel } from '../../../src/lib/model/transformer';
import { useGpu } from '../../helpers/gpu';
import { TINY, randomSequences } from './tiny-models';

const ATOL = 1e-4;
/** The sampler's logprob and the top pass's: one f32 row, two reduction orders. */
const SAME_ROW_ATOL = 1e-5;

describe('generation: top logprobs', () => {
	const gpu = useGpu();

	it('the k most likely tokens of each step, as the f64 reference ranks them', async () => {
		const config = TINY.llama;
		const weights = randomWeights(config, 1);
		const model = await TransformerModel.create(
			gpu(),
			config,
			MemoryWeightSource.forConfig(config, weights)
		);
		const generator = new Generator(model);
		try {
			const prompts = randomSequences(config.vocabSize, [5, 4], 7);
			const V = config.vocabSize;
			for (const [temperature, k] of [
				[0.7, 20],
				[0, 3]
			]) {
				const steps: StepToken[][] = [];
				const out = await generator.generate(prompts, {
					maxTokens: 3,
					temperature,
					seed: 3,
					topLogprobs: k,
					ignoreEos: true,
					onStep: (tokens) => void steps.push([...tokens])
				});
				out.forEach((r, b) => {
					expect(r.topLogprobs).toHaveLength(r.ids.length);
					r.ids.forEach((id, s) => {
						const top = r.topLogprobs![s];
						expect(top).toHaveLength(k);
						expect(steps[s].find((t) => t.index === b)!.top).toEqual(top);
						const ids = [...prompts[b], ...r.ids.slice(0, s)];
						const z = referenceLogits(config, weights, ids).subarray((ids.length - 1) * V);
						const T = temperature > 0 ? temperature : 1;
						const max = Math.max(...z);
						let sum = 0;
						for (let i = 0; i < V; i++) sum += Math.exp((z[i] - max) / T);
						const ref = (i: number) => (z[i] - max) / T - Math.log(sum);
						const best = Array.from({ length: V }, (_, i) => ref(i))
							.sort((a, c) => c - a)
							.slice(0, k);
						top.forEach((t, j) => {
							expect(Math.abs(t.logprob - best[j]), `step ${s} rank ${j}`).toBeLessThan(ATOL);
							expect(Math.abs(t.logprob - ref(t.id)), `step ${s} id ${t.id}`).toBeLessThan(ATOL);
						});
						const mine = top.find((t) => t.id === id);
						if (temperature === 0) expect(mine).toBe(top[0]);
						if (mine) expect(Math.abs(mine.logprob - r.logprobs[s])).toBeLessThan(SAME_ROW_ATOL);
					});
				});
			}
			// not asked: nothing returned (and no pass recorded)
			const plain = await generator.generate(prompts, { maxTokens: 1, temperature: 0 });
			expect(plain[0].topLogprobs).toBeUndefined();
		} finally {
			generator.release();
			model.release();
		}
	});
});
