/**
 * Shared prefixes in a prefill: prompts that begin with the same tokens (a step's first
 * turns: two system prompts, a prompt that shares nothing, a prompt twice) prefill each
 * distinct prefix once, copy its keys and values to the rows that share it, and generate
 * what a generator that prefills every prompt whole does (greedy ids exact, logprobs within
 * 1e-4: the rest of each prompt goes through the decode layer's kernels). The copied tokens
 * are counted; a next turn then extends the store's sequences as before. The extend's rows
 * attending one by one (extendAttention 'rows') generate the same.
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../../../../src/lib/util/random';
import { Generator } from '../../../../src/lib/model/generate/generator';
import type { GeneratedSequence } from '../../../../src/lib/model/generate/options';
import { MemoryWeightSource, randomWeights } from '../../../../src/lib/testing/random-weights';
import { TransformerModel } from '../../../../src/lib/model/transformer/transformer';
import type { ModelConfig } from '../../../../src/lib/model/types';
import { useGpu } from '../../../helpers/gpu';
import { TINY, randomSequences } from '../tiny-models';
import { randomizeLoraB } from '../../../helpers/lora';

const GREEDY = { maxTokens: 5, temperature: 0, ignoreEos: true } as const;

describe('generation with shared prefixes', () => {
	const gpu = useGpu();

	function expectSame(a: GeneratedSequence[], b: GeneratedSequence[]) {
		expect(a.map((r) => r.ids)).toEqual(b.map((r) => r.ids));
		a.forEach((r, i) => expect(r.logprobs).toBeAllclose(b[i].logprobs, { atol: 1e-4, rtol: 0 }));
	}

	const models: [string, ModelConfig][] = [
		['Llama (GQA 4/2)', TINY.llama],
		['Qwen3 (q/k norm)', TINY.qwen3]
	];
	for (const [name, config] of models)
		it(`${name}: each prefix once, the same generations as whole prefills`, async () => {
			const source = MemoryWeightSource.forConfig(config, randomWeights(config, 8));
			const model = await TransformerModel.create(gpu(), config, source, { lora: { rank: 4 } });
			await randomizeLoraB(model.lora!, new Rng(8), 0.3);
			const system = randomSequences(config.vocabSize, [24, 24], 9);
			const tails = randomSequences(config.vocabSize, [3, 9, 5, 1, 7, 4], 10);
			const prompts = [
				...tails.map((t, i) => [...system[i % 2], ...t]),
				randomSequences(config.vocabSize, [30], 11)[0],
				[...system[1], ...tails[1]]
			];
			const shared = new Generator(model);
			const whole = new Generator(model, { sharePrefixes: false, prefixCache: false });
			const out = await shared.generate(prompts, GREEDY);
			expectSame(out, await whole.generate(prompts, GREEDY));
			// the rows of a prefill over cached tokens attending one by one: the same
			const rows = new Generator(model, { extendAttention: 'rows' });
			expectSame(await rows.generate(prompts, GREEDY), out);
			rows.release();
			// 8 prompts, 3 distinct prefixes of 24 (the unshared prompt keeps its own): 5 copied
			expect(shared.stats.sharedTokens).toBe(5 * 24);
			expect(shared.stats.promptTokens).toBe(whole.stats.promptTokens - 5 * 24);
			expect(whole.stats.sharedTokens).toBe(0);
			// the next turn extends the stored sequences
			const next = out.map((r, b) => [...r.promptIds, ...r.ids, 3 + b]);
			expectSame(await shared.generate(next, GREEDY), await whole.generate(next, GREEDY));
			expect(shared.stats.sharedTokens).toBe(5 * 24);
			expect(shared.stats.reusedTokens).toBeGreaterThan(0);
			shared.release();
			whole.release();
			model.release();
		});
});
