/**
 * Forward pass of the GPU model against the f64 reference: padding, the chunked vocabulary,
 * LoRA's no-op at B = 0 and its switch, bad input. Logprob tolerance atol 3e-5 + rtol 1e-5:
 * seen 0.7e-6 to 1.6e-6 (f32 through two layers), an order of magnitude of margin for other
 * devices, while a wrong op moves logprobs by 1e-2 or more.
 */
import { describe, expect, it } from 'vitest';
import { ShapeMismatchError } from '../../../../src/lib/gpu/errors';
import { Rng } from '../../../../src/lib/util/random';
import { toTokenBatch } from '../../../../src/lib/model/transformer/batch';
import { LoraConfigError, WeightsMismatchError } from '../../../../src/lib/model/errors';
import { MemoryWeightSource, randomWeights } from '../../../../src/lib/testing/random-weights';
import { referenceLogprobs } from '../../../../src/lib/testing/reference';
import { TransformerModel } from '../../../../src/lib/model/transformer/transformer';
import type { TransformerOptions } from '../../../../src/lib/model/transformer/transformer-options';
import type { ModelConfig } from '../../../../src/lib/model/types';
import { useGpu } from '../../../helpers/gpu';
import { TINY, randomSequences } from '../tiny-models';
import { trackBuffers } from './track-buffers';
import { randomizeLoraB } from '../../../helpers/lora';

const LOGPROB_TOL = { atol: 3e-5, rtol: 1e-5 };

describe('transformer forward', () => {
	const gpu = useGpu();

	async function modelFor(config: ModelConfig, options: TransformerOptions = {}, seed = 1) {
		const weights = randomWeights(config, seed);
		const source = MemoryWeightSource.forConfig(config, weights);
		return { model: await TransformerModel.create(gpu(), config, source, options), weights };
	}

	/** Sets every LoRA B to random values (B = 0 would make the adapters a no-op). */
	const randomizeB = (model: TransformerModel, seed: number) =>
		randomizeLoraB(model.lora!, new Rng(seed), 0.2);

	const cases: [string, ModelConfig][] = [
		['Llama, tied, GQA 4/2', TINY.llama],
		['Qwen2, q/k/v biases, untied, GQA 3/1', TINY.qwen2],
		['Qwen3, q/k norm, head_dim 16 != 48/4, GQA 4/1', TINY.qwen3],
		['Llama 3 rope scaling, untied, 4/4 heads', TINY.llama3]
	];
	for (const [name, config] of cases) {
		it(`${name}: logprobs match the f64 reference on a right-padded batch`, async () => {
			const { model, weights } = await modelFor(config);
			const seqs = randomSequences(config.vocabSize, [11, 5, 1, 8], 7);
			const result = await model.scoreTokens(seqs);
			expect([result.B, result.T]).toEqual([4, 11]);
			const ref = referenceLogprobs(config, weights, toTokenBatch(seqs));
			expect(result.logprobs).toBeAllclose(ref, LOGPROB_TOL);
			// Past each sequence's end there is no target: NaN, exactly where the reference has it.
			expect(result.logprobs.filter(Number.isNaN).length).toBe(4 * 10 - (10 + 4 + 0 + 7));
			model.release();
		});
	}

	it('sequences over several attention tiles (T = 70, 33) match the reference', async () => {
		const config = TINY.wide;
		const { model, weights } = await modelFor(config, {}, 2);
		const seqs = randomSequences(config.vocabSize, [70, 33], 5);
		const result = await model.scoreTokens(seqs);
		const ref = referenceLogprobs(config, weights, toTokenBatch(seqs));
		expect(result.logprobs).toBeAllclose(ref, LOGPROB_TOL);
		model.release();
	});

	it('a sequence scores the same alone as right-padded in a batch (and with LoRA)', async () => {
		const config = TINY.qwen3;
		const { model } = await modelFor(config, { lora: { rank: 4 } });
		await randomizeB(model, 3);
		const seqs = randomSequences(config.vocabSize, [9, 3, 6], 11);
		const batched = await model.scoreTokens(seqs);
		for (const [b, seq] of seqs.entries()) {
			const alone = await model.scoreTokens([seq]);
			const row = batched.logprobs.subarray(b * 8, b * 8 + seq.length - 1);
			// Only the matmul's tiling of a different row count can differ: a few f32 ulps.
			expect(alone.logprobs).toBeAllclose(row, { atol: 1e-5, rtol: 1e-6 });
		}
		model.release();
	});

	it('takes ids [B, T] with lengths as well as ragged arrays, and ignores what lies past a length', async () => {
		const config = TINY.llama;
		const { model } = await modelFor(config);
		const seqs = randomSequences(config.vocabSize, [6, 4], 2);
		const ids = [...seqs[0], ...seqs[1], 299, 123]; // garbage past length 4
		const a = await model.scoreTokens(seqs);
		const b = await model.scoreTokens({ ids, lengths: [6, 4], seqLen: 6 });
		expect(b.logprobs).toEqual(a.logprobs);
		model.release();
	});

	it('reuses its buffers across calls of one batch shape; another shape trims the pool', async () => {
		const config = TINY.llama;
		const { model } = await modelFor(config, { lora: { rank: 2 } });
		const seqs = randomSequences(config.vocabSize, [6, 4], 3);
		const g = new Float32Array(2 * 5).fill(0.1);
		const call = () => trackBuffers(gpu(), () => model.forwardBackward(seqs, g));
		const first = await call();
		const second = await call();
		const third = await call();
		// Later calls create only the recorders' scratch buffers (logits chunk, LoRA dx A^T).
		expect(second.created).toBeLessThan(first.created / 2);
		expect(third.created).toBe(second.created);
		// A new shape: the old buffers are destroyed, not kept beside the new ones.
		const other = await trackBuffers(gpu(), () => model.scoreTokens([[1, 2, 3]]));
		expect(other.created).toBeGreaterThan(0);
		model.release();
	});

	it('a vocabulary in many chunks gives the logprobs of one chunk', async () => {
		const config = TINY.qwen2; // untied: embedding and lm_head both chunked
		const seqs = randomSequences(config.vocabSize, [7, 5], 4);
		const whole = await modelFor(config);
		// 36 columns x 4 bytes x 23 rows: 13 chunks of at most 23 rows for 290 rows.
		const chunked = await modelFor(config, { maxChunkBytes: 36 * 4 * 23 });
		expect(chunked.model.weights.embed.chunks.length).toBe(13);
		expect(chunked.model.weights.lmHead.chunks.length).toBe(13);
		const a = await whole.model.scoreTokens(seqs);
		const b = await chunked.model.scoreTokens(seqs);
		expect(b.logprobs).toBeAllclose(a.logprobs, { atol: 1e-5, rtol: 1e-6 });
		whole.model.release();
		chunked.model.release();
	});

	it('LoRA with B = 0 gives exactly the base model (bit-identical), on every architecture', async () => {
		for (const config of [TINY.llama, TINY.qwen2, TINY.qwen3]) {
			const seqs = randomSequences(config.vocabSize, [8, 3], 9);
			const base = await modelFor(config);
			const adapted = await modelFor(config, { lora: {}, seed: 5 });
			const a = await base.model.scoreTokens(seqs);
			const b = await adapted.model.scoreTokens(seqs);
			expect(Array.from(b.logprobs)).toEqual(Array.from(a.logprobs));
			base.model.release();
			adapted.model.release();
		}
	});

	it('LoRA on matches the reference with the adapters; off gives the base model exactly', async () => {
		const config = TINY.qwen2;
		const { model, weights } = await modelFor(config, {
			lora: { rank: 4, alpha: 8, targetModules: ['q_proj', 'v_proj', 'down_proj'] }
		});
		const params = await randomizeB(model, 8);
		const seqs = randomSequences(config.vocabSize, [7, 5], 13);
		const batch = toTokenBatch(seqs);
		const on = await model.scoreTokens(seqs);
		const off = await model.scoreTokens(seqs, { lora: false });
		const refOn = referenceLogprobs(config, weights, batch, { scale: 2, params });
		const refOff = referenceLogprobs(config, weights, batch);
		expect(on.logprobs).toBeAllclose(refOn, LOGPROB_TOL);
		expect(off.logprobs).toBeAllclose(refOff, LOGPROB_TOL);
		// The adapters move the logprobs far beyond the tolerance.
		let moved = 0;
		for (let i = 0; i < refOn.length; i++)
			if (!Number.isNaN(refOn[i])) moved = Math.max(moved, Math.abs(refOn[i] - refOff[i]));
		expect(moved).toBeGreaterThan(1e-2);
		const base = await modelFor(config);
		expect(Array.from(off.logprobs)).toEqual(
			Array.from((await base.model.scoreTokens(seqs)).logprobs)
		);
		base.model.release();
		model.release();
	});

	it('temperature divides the logits', async () => {
		const config = TINY.llama;
		const { model, weights } = await modelFor(config);
		const seqs = randomSequences(config.vocabSize, [6], 21);
		const hot = await model.scoreTokens(seqs, { temperature: 0.7 });
		const ref = referenceLogprobs(config, weights, toTokenBatch(seqs), undefined, 0.7);
		expect(hot.logprobs).toBeAllclose(ref, LOGPROB_TOL);
		model.release();
	});

	it('rejects bad batches before running anything', async () => {
		const config = TINY.llama;
		const { model } = await modelFor(config);
		await expect(model.scoreTokens([[1, 2, 300]])).rejects.toThrow(ShapeMismatchError);
		await expect(model.scoreTokens([[1, 2], []])).rejects.toThrow(ShapeMismatchError);
		await expect(model.scoreTokens([])).rejects.toThrow(ShapeMismatchError);
		await expect(model.scoreTokens([[1, -2]])).rejects.toThrow(ShapeMismatchError);
		await expect(model.scoreTokens({ ids: [1, 2, 3], lengths: [2, 2], seqLen: 2 })).rejects.toThrow(
			ShapeMismatchError
		);
		await expect(
			model.scoreTokens({ ids: [1, 2, 3, 4], lengths: [3, 1], seqLen: 2 })
		).rejects.toThrow(ShapeMismatchError);
		// Still usable.
		expect((await model.scoreTokens([[1, 2, 3]])).logprobs.length).toBe(2);
		model.release();
		await expect(model.scoreTokens([[1, 2]])).rejects.toThrow(/after release/);
	});

	it('refuses a weight source that does not match the config, allocating nothing', async () => {
		const config = TINY.qwen3;
		const weights = randomWeights(config, 1);
		weights.delete('model.layers.1.self_attn.k_norm.weight');
		const shapes = new Map([['model.layers.0.mlp.up_proj.weight', [72, 47]]]);
		const source = MemoryWeightSource.forConfig(config, weights);
		const bad = new MemoryWeightSource(
			weights,
			new Map([...source.list().map((t) => [t.name, t.shape] as [string, number[]]), ...shapes])
		);
		let error: unknown;
		const tally = await trackBuffers(gpu(), async () => {
			try {
				await TransformerModel.create(gpu(), config, bad);
			} catch (e) {
				error = e;
			}
		});
		expect(error).toBeInstanceOf(WeightsMismatchError);
		const message = (error as Error).message;
		expect(message).toContain('model.layers.1.self_attn.k_norm.weight');
		expect(message).toContain('model.layers.0.mlp.up_proj.weight is [72,47], expected [72,48]');
		expect(tally.created).toBe(0);
	});

	it('frees every uploaded weight when reading one fails part-way', async () => {
		const config = TINY.llama;
		const weights = randomWeights(config, 1);
		const source = MemoryWeightSource.forConfig(config, weights);
		const failing = {
			list: () => source.list(),
			readF32: async (name: string) => {
				if (name === 'model.layers.1.mlp.gate_proj.weight') throw new Error('disk on fire');
				return source.readF32(name);
			}
		};
		const tally = await trackBuffers(gpu(), () => TransformerModel.create(gpu(), config, failing));
		expect(tally.created).toBeGreaterThan(10);
		expect(tally.alive).toBe(0);
		await expect(TransformerModel.create(gpu(), config, failing)).rejects.toThrow('disk on fire');
	});

	it('refuses an invalid LoRA config', async () => {
		const config = TINY.llama;
		const source = MemoryWeightSource.forConfig(config, randomWeights(config, 1));
		for (const lora of [{ dropout: 0.05 }, { rank: 0 }, { alpha: -1 }, { targetModules: [] }])
			await expect(TransformerModel.create(gpu(), config, source, { lora })).rejects.toThrow(
				LoraConfigError
			);
	});
});
