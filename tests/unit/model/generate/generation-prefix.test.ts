/**
 * The prefix store: a call whose prompts extend earlier calls' sequences (a game's next
 * turn) prefills only the new tokens and generates what a generator without the store does
 * (greedy ids exact, logprobs within 1e-4: the suffix goes through the decode layer's
 * kernels instead of the prefill's, f32 sums in another order). Reuse is counted; an
 * adapter change, a prompt that diverges, a store that grows and suffixes split over
 * several chunks are each checked.
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../../../../src/lib/util/random';
import { Generator } from '../../../../src/lib/model/generate/generator';
import type { GeneratedSequence } from '../../../../src/lib/model/generate/options';
import { MemoryWeightSource, randomWeights } from '../../../../src/lib/testing/random-weights';
import { resolveLoraConfig } from '../../../../src/lib/model/transformer/lora';
import { estimateModelMemory } from '../../../../src/lib/model/transformer/memory';
import { kvCacheBytes } from '../../../../src/lib/model/transformer/kv-cache';
import { TransformerModel } from '../../../../src/lib/model/transformer/transformer';
import type { ModelConfig } from '../../../../src/lib/model/types';
import { useGpu } from '../../../helpers/gpu';
import { TINY, randomSequences } from '../tiny-models';
import { randomizeLoraB } from '../../../helpers/lora';

const LOGPROB_TOL = { atol: 1e-4, rtol: 0 };
const GREEDY = { maxTokens: 6, temperature: 0, ignoreEos: true } as const;

describe('generation with the prefix store', () => {
	const gpu = useGpu();

	async function loraModel(config: ModelConfig, seed: number, memoryBudgetBytes?: number) {
		const source = MemoryWeightSource.forConfig(config, randomWeights(config, seed));
		const model = await TransformerModel.create(gpu(), config, source, {
			lora: { rank: 4 },
			memoryBudgetBytes
		});
		await randomizeB(model, seed);
		return model;
	}

	const randomizeB = (model: TransformerModel, seed: number) =>
		randomizeLoraB(model.lora!, new Rng(seed), 0.3);

	/** Each sequence so far, then `extra` new tokens: the next turn's prompts, in reverse
	 * order (a sequence's cache row changes, so stale rows of the last call cannot pass). */
	function nextTurn(out: GeneratedSequence[], vocab: number, extra: number, seed: number) {
		const more = randomSequences(vocab, Array(out.length).fill(extra), seed);
		return out.map((r, b) => [...r.promptIds, ...r.ids, ...more[b]]).reverse();
	}

	function expectSame(a: GeneratedSequence[], b: GeneratedSequence[]) {
		expect(a.map((r) => r.ids)).toEqual(b.map((r) => r.ids));
		a.forEach((r, i) => expect(r.logprobs).toBeAllclose(b[i].logprobs, LOGPROB_TOL));
	}

	const models: [string, ModelConfig][] = [
		['Llama (GQA 4/2)', TINY.llama],
		['Qwen2 (q/k/v biases, GQA 3/1)', TINY.qwen2],
		['Qwen3 (q/k norm)', TINY.qwen3]
	];
	it('a store capped at two sequences keeps the two last finished and generates the same', async () => {
		const config = TINY.llama;
		const model = await loraModel(config, 4);
		// two entries of 256 slots: f32 k and v of every layer
		const entry = kvCacheBytes(config, 1, 256);
		const capped = new Generator(model, { prefixStoreBytes: 2 * entry + entry / 2 });
		const plain = new Generator(model, { prefixCache: false });
		expect(() => new Generator(model, { prefixStoreBytes: -1 })).toThrow(/prefixStoreBytes/);
		let prompts = randomSequences(config.vocabSize, [20, 41, 33, 27], 6);
		for (let turn = 0; turn < 3; turn++) {
			const before = capped.stats.reusedTokens;
			const out = await capped.generate(prompts, GREEDY);
			expectSame(out, await plain.generate(prompts, GREEDY));
			expect(capped.prefixStore).toMatchObject({ entries: 2, slots: 256 });
			// the store kept two of the last call's four sequences: two prompts now hit
			if (turn > 0) expect(capped.stats.reusedTokens).toBeGreaterThan(before);
			prompts = nextTurn(out, config.vocabSize, 7, 20 + turn);
		}
		// nothing stored when one entry is over the cap
		const none = new Generator(model, { prefixStoreBytes: entry / 2 });
		await none.generate(prompts, GREEDY);
		expect(none.prefixStore).toBeUndefined();
		expect(none.stats.reusedTokens).toBe(0);
		for (const g of [capped, plain, none]) g.release();
		model.release();
	});

	for (const [name, config] of models)
		it(`${name}: three turns reuse every stored token and generate what a fresh prefill does`, async () => {
			const model = await loraModel(config, 3);
			const cached = new Generator(model);
			const plain = new Generator(model, { prefixCache: false });
			let prompts = randomSequences(config.vocabSize, [20, 41, 33], 5);
			let stored = 0;
			for (let turn = 0; turn < 3; turn++) {
				const before = { ...cached.stats };
				const out = await cached.generate(prompts, GREEDY);
				expectSame(out, await plain.generate(prompts, GREEDY));
				const reused = cached.stats.reusedTokens - before.reusedTokens;
				const prefilled = cached.stats.promptTokens - before.promptTokens;
				const total = prompts.reduce((n, p) => n + p.length, 0);
				// turn 0 has nothing stored; later turns reuse each sequence but its last token
				expect(reused).toBe(stored);
				expect(prefilled + reused).toBe(total);
				stored = out.reduce((n, r) => n + r.promptIds.length + r.ids.length - 1, 0);
				prompts = nextTurn(out, config.vocabSize, 7, 10 + turn);
			}
			expect(plain.stats.reusedTokens).toBe(0);
			cached.release();
			plain.release();
			model.release();
		});

	it('an adapter update clears the store; a diverging prompt reuses the shared part', async () => {
		const config = TINY.llama;
		const model = await loraModel(config, 7);
		const cached = new Generator(model);
		const plain = new Generator(model, { prefixCache: false });
		const prompts = randomSequences(config.vocabSize, [30, 26], 2);
		const first = await cached.generate(prompts, GREEDY);
		const next = nextTurn(first, config.vocabSize, 5, 3);
		await randomizeB(model, 8); // the policy moved: stored keys are stale
		const reused = cached.stats.reusedTokens;
		expectSame(await cached.generate(next, GREEDY), await plain.generate(next, GREEDY));
		expect(cached.stats.reusedTokens).toBe(reused);
		// the store now holds `next`'s sequences; this prompt shares 20 tokens of the first
		const diverging = [[...next[0].slice(0, 20), ...randomSequences(config.vocabSize, [9], 4)[0]]];
		expect(diverging[0][20]).not.toBe(next[0][20]);
		expectSame(await cached.generate(diverging, GREEDY), await plain.generate(diverging, GREEDY));
		expect(cached.stats.reusedTokens - reused).toBe(20);
		cached.release();
		plain.release();
		model.release();
	});

	it('suffixes over several chunks, and a store grown for a bigger call, keep their entries', async () => {
		const config = TINY.qwen2;
		const model = await loraModel(config, 9);
		// 8-token prefill groups: a 30-token suffix runs in four chunks
		const cached = new Generator(model, { prefillTokens: 8 });
		const plain = new Generator(model, { prefixCache: false });
		const prompts = randomSequences(config.vocabSize, [18, 24], 6);
		const first = await cached.generate(prompts, GREEDY);
		const small = cached.prefixStore!;
		expect(small.used).toBe(2);
		// more prompts and longer ones than the store was made for: it grows, entries moved
		const next = [
			...nextTurn(first, config.vocabSize, 30, 7),
			...randomSequences(config.vocabSize, [40, 17, 60], 8)
		];
		const reused = cached.stats.reusedTokens;
		expectSame(await cached.generate(next, GREEDY), await plain.generate(next, GREEDY));
		const grown = cached.prefixStore!;
		expect(grown.entries).toBeGreaterThan(small.entries);
		expect(grown.slots).toBeGreaterThan(small.slots);
		expect(grown.used).toBe(5);
		expect(cached.stats.reusedTokens - reused).toBe(
			first.reduce((n, r) => n + r.promptIds.length + r.ids.length - 1, 0)
		);
		cached.release();
		plain.release();
		model.release();
	});

	it('no store where it would not fit the memory budget beside the call; a smaller call gets one', async () => {
		const config = TINY.llama;
		// weights, LoRA and 4 MiB: 64 prompts' store at 256 slots (2 layers x k, v x [64, 256,
		// 2, 8] f32, 4 MiB) does not fit beside their batches; two prompts' does
		const lora = resolveLoraConfig({ rank: 4 });
		const budget = estimateModelMemory(config, { lora }).totalBytes + 4 * 2 ** 20;
		const model = await loraModel(config, 11, budget);
		const cached = new Generator(model);
		const plain = new Generator(model, { prefixCache: false });
		const many = randomSequences(config.vocabSize, Array(64).fill(20), 12);
		expectSame(await cached.generate(many, GREEDY), await plain.generate(many, GREEDY));
		expect(cached.prefixStore).toBeUndefined();
		expect(cached.stats.batches).toBeGreaterThan(1);
		const two = many.slice(0, 2);
		await cached.generate(two, GREEDY);
		expect(cached.prefixStore).toMatchObject({ entries: 2, used: 2 });
		cached.release();
		plain.release();
		model.release();
	});
});
