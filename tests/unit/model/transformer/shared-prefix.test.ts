/**
 * Shared prefixes against the whole sequences: rows that continue P prefixes of p tokens,
 * scored and trained with `prefix`, give the logprobs of the whole sequences' own positions
 * (f32: within 2e-5 + 1e-5 relative; the same arithmetic, products tiled over other row
 * counts) and the same LoRA gradients (within 1e-4 of each tensor's largest + 1e-3
 * relative), with the adapters and without, keeping the activations and recomputing them
 * (grpo's train-step test checks a whole step, KL included).
 * A prefix no row continues, and one continued by a single row, are in the batch.
 */
import { describe, expect, it } from 'vitest';
import { ShapeMismatchError } from '../../../../src/lib/gpu/errors';
import { Rng } from '../../../../src/lib/util/random';
import { MemoryWeightSource, randomWeights } from '../../../../src/lib/testing/random-weights';
import { TransformerModel } from '../../../../src/lib/model/transformer/transformer';
import type { ActivationPolicy } from '../../../../src/lib/model/transformer/transformer-options';
import type { ModelConfig } from '../../../../src/lib/model/types';
import { useGpu } from '../../../helpers/gpu';
import { randomizeLoraB } from '../../../helpers/lora';
import { TINY, randomSequences } from '../tiny-models';

describe('shared prefixes', () => {
	const gpu = useGpu();
	const p = 5;
	const rowPrefix = [0, 2, 0, 0];
	const suffixLengths = [6, 3, 7, 4];

	async function setup(config: ModelConfig, seed: number) {
		const source = MemoryWeightSource.forConfig(config, randomWeights(config, seed));
		const model = await TransformerModel.create(gpu(), config, source, {
			lora: { rank: 4, alpha: 8 },
			seed
		});
		const rng = new Rng(seed + 1);
		await randomizeLoraB(model.lora!, rng, 0.2);
		const prefixes = randomSequences(config.vocabSize, [p, p, p], seed + 2);
		const rows = randomSequences(config.vocabSize, suffixLengths, seed + 3);
		const whole = rows.map((r, b) => [...prefixes[rowPrefix[b]], ...r]);
		const prefix = { ids: prefixes.flat(), length: p, rowPrefix };
		return { model, rng, rows, whole, prefix };
	}

	/** Row b's grid entry t (its own target t + 1) is the whole sequence's p + t. */
	const T = Math.max(...suffixLengths);
	const wholeIndex = (b: number, t: number) => b * (p + T - 1) + p + t;

	// The backward's first call per config compiles ~10 s of pipelines on SwiftShader: the
	// gradients on Llama (GQA 4/2) only; Qwen3's keys after k_norm and RoPE in the forward.
	const cases: [string, ModelConfig, ActivationPolicy[]][] = [
		['Llama (tied, GQA 4/2)', TINY.llama, ['keep', 'recompute']],
		['Qwen3 (q/k norm, GQA 4/1)', TINY.qwen3, []]
	];
	for (const [name, config, policies] of cases) {
		it(`${name}: the rows' logprobs are the whole sequences', with and without LoRA`, async () => {
			const { model, rows, whole, prefix } = await setup(config, 11);
			for (const lora of [true, false]) {
				const full = (await model.scoreTokens(whole, { lora })).logprobs;
				const got = await model.scoreTokens(rows, { lora, prefix });
				expect([got.B, got.T]).toEqual([4, T]);
				let compared = 0;
				rows.forEach((r, b) => {
					for (let t = 0; t < T - 1; t++) {
						const v = got.logprobs[b * (T - 1) + t];
						if (t + 1 >= r.length) {
							expect(v).toBeNaN();
							continue;
						}
						const want = full[wholeIndex(b, t)];
						expect(Math.abs(v - want), `lora ${lora} [${b}, ${t}]`).toBeLessThan(
							2e-5 + 1e-5 * Math.abs(want)
						);
						compared++;
					}
				});
				expect(compared).toBe(suffixLengths.reduce((s, n) => s + n - 1, 0));
			}
			model.release();
		});

		for (const activations of policies)
			it(`${name}: the LoRA gradients are the whole sequences' (${activations})`, async () => {
				const { model, rng, rows, whole, prefix } = await setup(config, 13);
				const g = rng.normals(rows.length * (T - 1));
				const gWhole = new Float64Array(rows.length * (p + T - 1));
				rows.forEach((_, b) => {
					for (let t = 0; t < T - 1; t++) gWhole[wholeIndex(b, t)] = g[b * (T - 1) + t];
				});
				await model.forwardBackward(whole, gWhole, { activations });
				const want = await model.lora!.readGrads();
				await model.forwardBackward(rows, g, { activations, prefix });
				const got = await model.lora!.readGrads();
				expect(got.size).toBe(want.size);
				for (const [key, w] of want) {
					const scale = w.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
					expect(scale, `${key}: all-zero gradient`).toBeGreaterThan(1e-6);
					const a = got.get(key)!;
					for (let i = 0; i < w.length; i++)
						expect(Math.abs(a[i] - w[i]), `${key}[${i}]`).toBeLessThan(
							1e-4 * scale + 1e-3 * Math.abs(w[i])
						);
				}
				model.release();
			});
	}

	it('rejects prefixes unlike the batch', async () => {
		const { model, rows, prefix } = await setup(TINY.llama, 17);
		for (const bad of [
			{ ...prefix, rowPrefix: [0, 3, 0, 0] },
			{ ...prefix, rowPrefix: [0, 1, 0] },
			{ ...prefix, ids: prefix.ids.slice(1) },
			{ ...prefix, length: 0 },
			{ ...prefix, ids: prefix.ids.map((id, i) => (i === 7 ? TINY.llama.vocabSize : id)) }
		])
			await expect(model.scoreTokens(rows, { prefix: bad })).rejects.toThrow(ShapeMismatchError);
		model.release();
	});
});
