/**
 * Batched generation against the f64 reference (whole prefix recomputed each step) and the
 * GPU's scoreTokens: greedy tokens are the argmax (where the top two differ by > 1e-3),
 * logprobs within 1e-4 (seen ~1e-6); batching (ids exact, logprobs 1e-5), seeds, stop tokens,
 * LoRA, chunked vocabulary, context and memory checks, abort, top_logprobs.
 */
import { describe, expect, it } from 'vitest';
import { ShapeMismatchError } from '../../../../src/lib/gpu/errors';
import { Rng } from '../../../../src/lib/util/random';
import {
	ContextLengthError,
	GenerationOptionsError,
	ModelTooLargeError
} from '../../../../src/lib/model/errors';
import { autoBatch } from '../../../../src/lib/model/generate/batch-size';
import { Generator } from '../../../../src/lib/model/generate/generator';
import type {
	GenerateOptions,
	GeneratedSequence,
	StepToken
} from '../../../../src/lib/model/generate/options';
import { prefillTokenLimit } from '../../../../src/lib/model/generate/batch-size';
import { sequenceSeed } from '../../../../src/lib/model/generate/seed';
import { peftName } from '../../../../src/lib/model/transformer/lora';
import { estimateModelMemory } from '../../../../src/lib/model/transformer/memory';
import { MemoryWeightSource, randomWeights } from '../../../../src/lib/testing/random-weights';
import { referenceLogits, type ReferenceLora } from '../../../../src/lib/testing/reference';
import { TransformerModel } from '../../../../src/lib/model/transformer/transformer';
import type { TransformerOptions } from '../../../../src/lib/model/transformer/transformer-options';
import type { ModelConfig } from '../../../../src/lib/model/types';
import { useGpu } from '../../../helpers/gpu';
import { TINY, randomSequences } from '../tiny-models';
import { trackBuffers } from '../transformer/track-buffers';
import { randomizeLoraB } from '../../../helpers/lora';

const LOGPROB_TOL = { atol: 1e-4, rtol: 0 };
/** Top-two logit gap below which greedy's argmax is not compared (a near-tie). */
const TIE = 1e-3;

describe('generation', () => {
	const gpu = useGpu();

	async function modelFor(config: ModelConfig, options: TransformerOptions = {}, seed = 1) {
		const weights = randomWeights(config, seed);
		const source = MemoryWeightSource.forConfig(config, weights);
		return { model: await TransformerModel.create(gpu(), config, source, options), weights };
	}

	/** Sets every LoRA B to random values; returns the adapter for the reference. */
	async function randomizeB(model: TransformerModel, seed: number): Promise<ReferenceLora> {
		const params = await randomizeLoraB(model.lora!, new Rng(seed), 0.3);
		return { scale: model.lora!.scale, params };
	}

	/** The reference's next-token view after `ids`: argmax, top-two gap, log_softmax(z / T). */
	function referenceNext(
		config: ModelConfig,
		weights: Map<string, Float32Array>,
		ids: number[],
		lora?: ReferenceLora
	) {
		const V = config.vocabSize;
		const z = referenceLogits(config, weights, ids, lora).subarray((ids.length - 1) * V);
		const order = Array.from({ length: V }, (_, i) => i).sort((a, b) => z[b] - z[a]);
		const logprob = (id: number, temperature = 1) => {
			let sum = 0;
			for (let i = 0; i < V; i++) sum += Math.exp((z[i] - z[order[0]]) / temperature);
			return (z[id] - z[order[0]]) / temperature - Math.log(sum);
		};
		return { argmax: order[0], gap: z[order[0]] - z[order[1]], logprob };
	}

	/** Checks every step of `out` against the reference (greedy: the argmax too). */
	function checkAgainstReference(
		config: ModelConfig,
		weights: Map<string, Float32Array>,
		prompts: number[][],
		out: GeneratedSequence[],
		temperature: number,
		lora?: ReferenceLora
	) {
		let compared = 0;
		out.forEach((r, b) => {
			expect(r.promptIds).toEqual(prompts[b]);
			expect(r.logprobs).toHaveLength(r.ids.length);
			const expected: number[] = [];
			r.ids.forEach((id, s) => {
				const next = referenceNext(config, weights, [...prompts[b], ...r.ids.slice(0, s)], lora);
				if (temperature <= 0 && next.gap > TIE) {
					expect(id, `sequence ${b} step ${s}`).toBe(next.argmax);
					compared++;
				}
				expected.push(next.logprob(id, temperature > 0 ? temperature : 1));
			});
			expect(r.logprobs).toBeAllclose(expected, LOGPROB_TOL);
		});
		if (temperature <= 0) expect(compared).toBeGreaterThan(out.length * 2);
	}

	/** The GPU full forward's logprobs of each sequence's new tokens, at `temperature`. */
	async function scoredLogprobs(
		model: TransformerModel,
		out: GeneratedSequence[],
		temperature = 1
	): Promise<number[][]> {
		const seqs = out.map((r) => [...r.promptIds, ...r.ids]);
		const { T, logprobs } = await model.scoreTokens(seqs, { temperature });
		return out.map((r, b) => {
			const from = b * (T - 1) + r.promptIds.length - 1;
			return Array.from(logprobs.subarray(from, from + r.ids.length));
		});
	}

	const models: [string, ModelConfig][] = [
		['Llama (tied, GQA 4/2)', TINY.llama],
		['Qwen2 (q/k/v biases, untied, GQA 3/1)', TINY.qwen2],
		['Qwen3 (q/k norm, head_dim 16)', TINY.qwen3]
	];
	for (const [name, config] of models)
		it(`${name}: greedy tokens are the f64 reference's argmax at every step`, async () => {
			const { model, weights } = await modelFor(config);
			const gen = new Generator(model);
			const prompts = randomSequences(config.vocabSize, [5, 1, 9], 3);
			const out = await gen.generate(prompts, { maxTokens: 5, temperature: 0, ignoreEos: true });
			expect(out.map((r) => [r.ids.length, r.finishReason])).toEqual(Array(3).fill([5, 'length']));
			checkAgainstReference(config, weights, prompts, out, 0);
			gen.release();
			model.release();
		});

	it('sampled tokens: logprobs equal the f64 reference and scoreTokens at T = 1 and T = 0.7', async () => {
		const config = TINY.qwen2;
		const { model, weights } = await modelFor(config, {}, 4);
		const gen = new Generator(model);
		const prompts = randomSequences(config.vocabSize, [3, 8], 9);
		for (const temperature of [1, 0.7]) {
			const out = await gen.generate(prompts, { maxTokens: 6, temperature, seed: 3 });
			// Sampling at T = 1 from a tiny random model: the tokens vary (the cache is
			// exercised with many different keys), unlike greedy's repeats.
			expect(new Set(out.flatMap((r) => r.ids)).size).toBeGreaterThan(4);
			checkAgainstReference(config, weights, prompts, out, temperature);
			const scored = await scoredLogprobs(model, out, temperature);
			out.forEach((r, b) => expect(r.logprobs).toBeAllclose(scored[b], LOGPROB_TOL));
		}
		gen.release();
		model.release();
	});

	it('a batch of prompts of different lengths equals each prompt alone', async () => {
		const config = TINY.llama3;
		const { model } = await modelFor(config, {}, 2);
		const gen = new Generator(model);
		const prompts = randomSequences(config.vocabSize, [7, 2, 12, 4], 5);
		const options: GenerateOptions = { maxTokens: 5, temperature: 0 };
		const batched = await gen.generate(prompts, options);
		for (const [b, prompt] of prompts.entries()) {
			const [alone] = await gen.generate([prompt], options);
			expect(alone.ids).toEqual(batched[b].ids);
			expect(alone.logprobs).toBeAllclose(batched[b].logprobs, { atol: 1e-5, rtol: 0 });
		}
		gen.release();
		model.release();
	});

	it('a seed repeats exactly, another seed differs, rounds of maxBatch change nothing', async () => {
		const config = TINY.qwen2;
		const { model } = await modelFor(config, {}, 6);
		const gen = new Generator(model);
		const prompts = randomSequences(config.vocabSize, [4, 9, 1, 6], 8);
		const options = { maxTokens: 6, temperature: 1, topK: 40, topP: 0.95, ignoreEos: true };
		const a = await gen.generate(prompts, { ...options, seed: 11 });
		const b = await gen.generate(prompts, { ...options, seed: 11 });
		expect(b).toEqual(a);
		const c = await gen.generate(prompts, { ...options, seed: 12 });
		expect(c.map((r) => r.ids)).not.toEqual(a.map((r) => r.ids));
		// Two rounds of two: sequence i still samples with (seed, i).
		const rounds = new Generator(model, { maxBatch: 2 });
		const d = await rounds.generate(prompts, { ...options, seed: 11 });
		expect(d.map((r) => r.ids)).toEqual(a.map((r) => r.ids));
		expect(rounds.session?.batch).toBe(2);
		expect(rounds.stats).toMatchObject({ calls: 1, batches: 2, sequences: 4, sessions: 1 });
		expect(rounds.stats.promptTokens).toBe(4 + 9 + 1 + 6);
		// the default batch: all four at once, three calls so far, one session
		expect(gen.stats).toMatchObject({ calls: 3, batches: 3, sequences: 12, sessions: 1 });
		expect(gen.stats.decodeSteps).toBe(3 * 6);
		// Keys per sequence are distinct and depend on the seed and the index only.
		const keys = new Set([11, 12].flatMap((s) => [0, 1, 2, 3].map((i) => sequenceSeed(s, i))));
		expect(keys.size).toBe(8);
		expect(sequenceSeed(2 ** 40 + 11, 0)).not.toBe(sequenceSeed(11, 0));
		rounds.release();
		gen.release();
		model.release();
	});

	it("the default batch: all of a call's prompts while their KV cache fits 1 GiB, split evenly; prefill groups scale with the model's width", () => {
		const small = {
			...TINY.llama,
			numLayers: 6,
			numKvHeads: 4,
			headDim: 64,
			intermediateSize: 768
		};
		const roomy = { maxStorageBufferBindingSize: 2 ** 31, maxBufferSize: 2 ** 40 };
		// k and v, 6 layers, 4 x 64 f32 a token: 12 KiB; 256 slots: 3 MiB a sequence
		expect(autoBatch(small, roomy, 100, 200)).toBe(100);
		expect(autoBatch(small, roomy, 512, 200)).toBe(341);
		expect(autoBatch(small, roomy, 512, 300)).toBe(170); // 512 slots a sequence
		// a binding limit of 32 MiB: one layer's k of 128 sequences
		const strict = { maxStorageBufferBindingSize: 2 ** 25, maxBufferSize: 2 ** 28 };
		expect(autoBatch(small, strict, 512, 200)).toBe(128);
		// a binding limit of 1 MiB: 4 sequences' k of a layer; never under 1, never over 1024
		expect(autoBatch(small, { ...roomy, maxStorageBufferBindingSize: 2 ** 20 }, 512, 200)).toBe(4);
		expect(autoBatch(small, { ...roomy, maxStorageBufferBindingSize: 2 ** 16 }, 512, 200)).toBe(1);
		expect(autoBatch({ ...small, numLayers: 1 }, roomy, 5000, 10)).toBe(1024);
		// Qwen2.5-0.5B's width keeps 4096 padded tokens a group; narrower models more, to 32768
		expect(prefillTokenLimit({ ...small, intermediateSize: 4864 })).toBe(4096);
		expect(prefillTokenLimit({ ...small, intermediateSize: 8960 })).toBe(4096);
		expect(prefillTokenLimit(small)).toBe(25941);
		expect(prefillTokenLimit({ ...small, intermediateSize: 64 })).toBe(32768);
	});

	it('stop tokens end a sequence (kept, finish stop); the config eos is the default; onStep streams and stops', async () => {
		const base = { ...TINY.qwen2, eosTokenIds: [] as number[] };
		const { model, weights } = await modelFor(base, {}, 7);
		const gen = new Generator(model);
		const prompts = randomSequences(base.vocabSize, [3, 6, 2], 4);
		const options = { maxTokens: 8, temperature: 1, seed: 21 };
		const full = await gen.generate(prompts, options);
		expect(full.every((r) => r.ids.length === 8 && r.finishReason === 'length')).toBe(true);
		// A token that first appears after step 0 of sequence 0.
		const at = full[0].ids.findIndex((id, s) => s > 0 && full[0].ids.indexOf(id) === s);
		expect(at).toBeGreaterThan(0);
		const stopId = full[0].ids[at];
		const truncated = full.map((r) => {
			const at = r.ids.indexOf(stopId);
			return at < 0 ? r : { ...r, ids: r.ids.slice(0, at + 1), finishReason: 'stop' };
		});
		const stopped = await gen.generate(prompts, { ...options, stopTokenIds: [stopId] });
		expect(stopped.map((r) => [r.ids, r.finishReason])).toEqual(
			truncated.map((r) => [r.ids, r.finishReason])
		);
		expect(stopped.map((r) => r.logprobs)).toEqual(
			truncated.map((r) => full[truncated.indexOf(r)].logprobs.slice(0, r.ids.length))
		);
		gen.release();
		model.release();

		// The same model with that token as its eos: stops by default, not with ignoreEos.
		const eosConfig = { ...base, eosTokenIds: [stopId] };
		const eosModel = await TransformerModel.create(
			gpu(),
			eosConfig,
			MemoryWeightSource.forConfig(eosConfig, weights)
		);
		const eosGen = new Generator(eosModel);
		const byEos = await eosGen.generate(prompts, options);
		expect(byEos.map((r) => r.ids)).toEqual(stopped.map((r) => r.ids));
		const ignoring = await eosGen.generate(prompts, { ...options, ignoreEos: true });
		expect(ignoring.map((r) => r.ids)).toEqual(full.map((r) => r.ids));

		// onStep: every step's tokens of the running sequences; stopping sequence 1 at step 2.
		const streamed: StepToken[][] = [];
		const viaStep = await eosGen.generate(prompts, {
			...options,
			ignoreEos: true,
			onStep: (tokens) => {
				streamed.push([...tokens]);
				return streamed.length === 3 ? [1] : undefined;
			}
		});
		expect(viaStep[1]).toMatchObject({ ids: full[1].ids.slice(0, 3), finishReason: 'stop' });
		expect(viaStep[0].ids).toEqual(full[0].ids);
		for (const [b, r] of viaStep.entries()) {
			const mine = streamed.flatMap((step) => step.filter((t) => t.index === b));
			expect(mine.map((t) => t.id)).toEqual(r.ids);
			expect(mine.map((t) => t.logprob)).toEqual(r.logprobs);
		}
		expect(streamed[3].map((t) => t.index)).toEqual([0, 2]);
		eosGen.release();
		eosModel.release();
	});

	it('LoRA applies during generation: B = 0 is the base model, a random B matches the reference with the adapter', async () => {
		const config = TINY.qwen3;
		const { model, weights } = await modelFor(config, { lora: { rank: 4 }, seed: 3 });
		const base = await TransformerModel.create(
			gpu(),
			config,
			MemoryWeightSource.forConfig(config, weights)
		);
		const prompts = randomSequences(config.vocabSize, [6, 3], 12);
		const options = { maxTokens: 5, temperature: 0 };
		const gen = new Generator(model);
		const baseGen = new Generator(base);
		const fromBase = await baseGen.generate(prompts, options);
		const zeroB = await gen.generate(prompts, options);
		expect(zeroB.map((r) => r.ids)).toEqual(fromBase.map((r) => r.ids));
		zeroB.forEach((r, b) =>
			expect(r.logprobs).toBeAllclose(fromBase[b].logprobs, { atol: 1e-6, rtol: 0 })
		);

		const lora = await randomizeB(model, 5);
		expect(lora.params.get(peftName(0, 'q_proj', 'B'))).toBeDefined();
		const adapted = await gen.generate(prompts, options);
		const moved = adapted.some(
			(r, b) =>
				r.ids.join() !== fromBase[b].ids.join() ||
				r.logprobs.some((lp, s) => Math.abs(lp - fromBase[b].logprobs[s]) > 1e-2)
		);
		expect(moved).toBe(true);
		checkAgainstReference(config, weights, prompts, adapted, 0, lora);
		const scored = await scoredLogprobs(model, adapted);
		adapted.forEach((r, b) => expect(r.logprobs).toBeAllclose(scored[b], LOGPROB_TOL));
		for (const g of [gen, baseGen]) g.release();
		for (const m of [model, base]) m.release();
	});

	it('a vocabulary in several chunks generates as one chunk does', async () => {
		const config = TINY.llama;
		const { model } = await modelFor(config, {}, 9);
		// 100 rows of 32 f32 per chunk: the lm_head (tied embedding) in 3 chunks.
		const { model: chunked } = await modelFor(config, { maxChunkBytes: 100 * 32 * 4 }, 9);
		expect(chunked.weights.lmHead.chunks).toHaveLength(3);
		const prompts = randomSequences(config.vocabSize, [4, 7], 2);
		const options = { maxTokens: 4, temperature: 1, seed: 8 };
		const [a, b] = [new Generator(model), new Generator(chunked)];
		const one = await a.generate(prompts, options);
		const three = await b.generate(prompts, options);
		expect(three.map((r) => r.ids)).toEqual(one.map((r) => r.ids));
		three.forEach((r, i) => expect(r.logprobs).toBeAllclose(one[i].logprobs, LOGPROB_TOL));
		for (const g of [a, b]) g.release();
		for (const m of [model, chunked]) m.release();
	});

	it('the context window: a longer prompt is a typed error before any work; new tokens stop at it', async () => {
		const config = TINY.llama;
		const { model } = await modelFor(config);
		const gen = new Generator(model, { maxContext: 8 });
		expect(gen.contextLength).toBe(8);
		const long = Array.from({ length: 9 }, (_, i) => i + 1);
		let error: unknown;
		const tally = await trackBuffers(gpu(), () =>
			gen.generate([[1, 2], long], { maxTokens: 1 }).catch((e) => (error = e))
		);
		expect(error).toBeInstanceOf(ContextLengthError);
		expect((error as ContextLengthError).kind).toBe('context-length');
		expect((error as Error).message).toMatch(/Prompt 1 has 9 tokens, more than .* 8 tokens/);
		expect(tally.created).toBe(0);
		// At the window: nothing to add; below it: up to the window.
		const out = await gen.generate([long.slice(0, 8), long.slice(0, 6)], {
			maxTokens: 10,
			temperature: 0
		});
		expect(out.map((r) => [r.ids.length, r.finishReason])).toEqual([
			[0, 'length'],
			[2, 'length']
		]);
		// The model's own max_position_embeddings (2048) without maxContext.
		const wide = new Generator(model, { maxContext: 1e9 });
		expect(wide.contextLength).toBe(config.maxPositionEmbeddings);
		await expect(wide.generate([new Array(2049).fill(3)], { maxTokens: 1 })).rejects.toThrow(
			ContextLengthError
		);
		gen.release();
		model.release();
	});

	it('bad options and prompts are typed errors', async () => {
		const config = TINY.llama;
		const { model } = await modelFor(config);
		const gen = new Generator(model);
		const ok = { maxTokens: 2 };
		for (const [prompts, options] of [
			[[[]], ok],
			[[[1]], { maxTokens: 0 }],
			[[[1]], { maxTokens: 1.5 }],
			[[[1]], { ...ok, topP: 0 }],
			[[[1]], { ...ok, topP: 1.5 }],
			[[[1]], { ...ok, topK: -1 }],
			[[[1]], { ...ok, temperature: NaN }],
			[[[1]], { ...ok, seed: 0.5 }],
			[[[1]], { ...ok, stopTokenIds: [config.vocabSize] }]
		] as [number[][], GenerateOptions][])
			await expect(gen.generate(prompts, options)).rejects.toThrow(GenerationOptionsError);
		await expect(gen.generate([[1, config.vocabSize]], ok)).rejects.toThrow(ShapeMismatchError);
		expect(() => new Generator(model, { maxBatch: 0 })).toThrow(GenerationOptionsError);
		expect(() => new Generator(model, { prefillTokens: 0.5 })).toThrow(GenerationOptionsError);
		expect(await gen.generate([], ok)).toEqual([]);
		gen.release();
		await expect(gen.generate([[1]], ok)).rejects.toThrow(/after release/);
		model.release();
	});

	it('refuses a batch x context whose KV cache will not fit the budget, before allocating; the default batch shrinks to fit', async () => {
		const config = TINY.llama;
		const weightsOnly = estimateModelMemory(config).totalBytes;
		const budget = weightsOnly + 4 * 2 ** 20;
		const { model } = await modelFor(config, { memoryBudgetBytes: budget });
		const gen = new Generator(model, { maxBatch: 64 });
		// 64 x 2048 slots x 2 layers x k, v x 2 x 8 f32: 8 MiB of cache alone.
		const prompts = Array.from({ length: 64 }, () => [1, 2, 3]);
		let error: unknown;
		const tally = await trackBuffers(gpu(), () =>
			gen.generate(prompts, { maxTokens: 2000 }).catch((e) => (error = e))
		);
		expect(error).toBeInstanceOf(ModelTooLargeError);
		expect((error as ModelTooLargeError).kind).toBe('over-memory');
		expect((error as Error).message).toMatch(/KV cache \(2 layers x k, v \[64, 2048, 2, 8\] f32\)/);
		expect((error as Error).message).toMatch(/over the budget of 4\.\d MiB|over the budget/);
		expect(tally.created).toBe(0);
		// A small call fits.
		const small = await gen.generate([[1, 2, 3]], { maxTokens: 2 });
		expect(small[0].ids).toHaveLength(2);
		gen.release();
		// The default batch halves until a batch fits: 64 x 256 slots (4 MiB of cache) do not.
		const auto = new Generator(model);
		const out = await auto.generate(prompts, { maxTokens: 8 });
		expect(out.map((o) => o.ids.length)).toEqual(prompts.map(() => 8));
		expect(auto.stats.batches).toBeGreaterThan(1);
		auto.release();
		model.release();
	});

	it('keeps its cache for calls of the same size; abort (in decode or prefill) rejects and leaves it usable', async () => {
		const config = TINY.llama;
		const { model } = await modelFor(config);
		const gen = new Generator(model);
		const prompts = randomSequences(config.vocabSize, [5, 3], 1);
		const first = await trackBuffers(gpu(), () => gen.generate(prompts, { maxTokens: 3 }));
		const session = gen.session;
		expect(session).toMatchObject({ batch: 2, slots: 256 });
		const second = await trackBuffers(gpu(), () => gen.generate(prompts, { maxTokens: 4 }));
		expect(gen.session).toEqual(session);
		// The second call makes only the prefill's buffers.
		expect(second.created).toBeLessThan(first.created / 2);

		const controller = new AbortController();
		const aborted = gen.generate(prompts, {
			maxTokens: 50,
			signal: controller.signal,
			onStep: () => controller.abort()
		});
		await expect(aborted).rejects.toMatchObject({ name: 'AbortError' });
		// Aborted while its prefill runs (a long prefill is most of a big call's time): it
		// stops between layers, before any decode step.
		const { decodeSteps, batches } = gen.stats;
		const inPrefill = new AbortController();
		const during = gen.generate(prompts, { maxTokens: 50, signal: inPrefill.signal });
		// one microtask on, the call has started (its batch counted) and waits on its prefill's
		// first layers: generate() runs from its queue's next tick to its first wait on the GPU
		await Promise.resolve();
		expect(gen.stats.batches).toBe(batches + 1);
		inPrefill.abort();
		await expect(during).rejects.toMatchObject({ name: 'AbortError' });
		expect(gen.stats.decodeSteps).toBe(decodeSteps);
		const after = await gen.generate(prompts, { maxTokens: 3, temperature: 0 });
		const fresh = new Generator(model);
		expect(after).toEqual(await fresh.generate(prompts, { maxTokens: 3, temperature: 0 }));
		await expect(
			gen.generate(prompts, { maxTokens: 3, signal: AbortSignal.abort() })
		).rejects.toMatchObject({ name: 'AbortError' });
		for (const g of [gen, fresh]) g.release();
		model.release();
	});

	// Top logprobs (GenerateOptions.topLogprobs, gpu/kernels/top-logprobs.ts): ranks compared
	// by value (a near-tie may swap two ids); the sampled token's logprob (the sampler's own
	// reduction of the same f32 row) equals its entry within 1e-5 when it is among the k.
	it('top logprobs: the k most likely tokens of each step, as the f64 reference ranks them', async () => {
		const config = TINY.llama;
		const { model, weights } = await modelFor(config);
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
							expect(Math.abs(t.logprob - best[j]), `step ${s} rank ${j}`).toBeLessThan(
								LOGPROB_TOL.atol
							);
							expect(Math.abs(t.logprob - ref(t.id)), `step ${s} id ${t.id}`).toBeLessThan(
								LOGPROB_TOL.atol
							);
						});
						const mine = top.find((t) => t.id === id);
						if (temperature === 0) expect(mine).toBe(top[0]);
						if (mine) expect(Math.abs(mine.logprob - r.logprobs[s])).toBeLessThan(1e-5);
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
