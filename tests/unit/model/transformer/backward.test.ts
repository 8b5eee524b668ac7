/**
 * LoRA gradients of forwardBackward against central finite differences (h = 1e-5, exact to
 * ~1e-9) of the f64 reference, loss = sum_t g[t] logprob[t], with random nonzero B.
 * Tolerance 1e-4 of the tensor's largest gradient + 1e-3 |fd| (seen: 8e-7); a wrong term is
 * off by 10% or more.
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../../../../src/lib/util/random';
import { run } from '../../../../src/lib/gpu/kernel';
import { adamwStep } from '../../../../src/lib/gpu/kernels/adamw';
import { createTensor } from '../../../../src/lib/gpu/tensor';
import { toTokenBatch } from '../../../../src/lib/model/transformer/batch';
import { LoraConfigError } from '../../../../src/lib/model/errors';
import { MemoryWeightSource, randomWeights } from '../../../../src/lib/testing/random-weights';
import { referenceLoss } from '../../../../src/lib/testing/reference';
import { TransformerModel } from '../../../../src/lib/model/transformer/transformer';
import type { TransformerOptions } from '../../../../src/lib/model/transformer/transformer-options';
import type { ModelConfig } from '../../../../src/lib/model/types';
import type { LoraConfig } from '../../../../src/lib/model/transformer/lora';
import { useGpu } from '../../../helpers/gpu';
import { TINY, randomSequences } from '../tiny-models';
import { trackBuffers } from './track-buffers';
import { randomizeLoraB } from '../../../helpers/lora';

describe('transformer backward (LoRA gradients)', () => {
	const gpu = useGpu();

	async function setup(
		config: ModelConfig,
		lora: Partial<LoraConfig>,
		seed: number,
		options: TransformerOptions = {}
	) {
		const weights = randomWeights(config, seed);
		const source = MemoryWeightSource.forConfig(config, weights);
		const model = await TransformerModel.create(gpu(), config, source, { ...options, lora, seed });
		const rng = new Rng(seed + 100);
		const params = await randomizeLoraB(model.lora!, rng, 0.2);
		return { model, weights, params, rng };
	}

	const cases: [string, ModelConfig, Partial<LoraConfig>, number[]?][] = [
		['Llama (tied, GQA 4/2), all 7 projections', TINY.llama, { rank: 4, alpha: 8 }],
		['Qwen2 (biases, untied, GQA 3/1)', TINY.qwen2, { rank: 3, alpha: 16 }],
		['Qwen3 (q/k norm, head_dim 16, GQA 4/1)', TINY.qwen3, { rank: 4, alpha: 8 }],
		[
			'Llama 3 rope, attention only',
			TINY.llama3,
			{ rank: 2, alpha: 4, targetModules: ['q_proj', 'k_proj', 'o_proj'] }
		],
		// Two query tiles and three key tiles of the attention kernels.
		['Qwen2-like, T = 70 and 40', TINY.wide, { rank: 2, alpha: 4 }, [70, 40]]
	];
	for (const [name, config, lora, lengths = [7, 4, 6]] of cases) {
		it(`${name}: dA, dB match f64 finite differences of the reference`, async () => {
			const { model, weights, params, rng } = await setup(config, lora, 3);
			const seqs = randomSequences(config.vocabSize, lengths, 17);
			const batch = toTokenBatch(seqs);
			const long = batch.T > 64;
			const g = rng.normals(batch.B * (batch.T - 1));
			await model.forwardBackward(seqs, g);
			const grads = await model.lora!.readGrads();
			const p64 = new Map([...params].map(([k, v]) => [k, Float64Array.from(v)]));
			const refLora = { scale: model.lora!.scale, params: p64 };
			const h = 1e-5;
			let checked = 0;
			for (const [pname, v] of p64) {
				const gpuGrad = grads.get(pname)!;
				const scale = gpuGrad.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
				expect(scale, `${pname}: all-zero gradient`).toBeGreaterThan(1e-6);
				// One entry per tensor on the long case (each difference costs two reference forwards).
				const entries = long ? [rng.int(v.length)] : [0, rng.int(v.length), v.length - 1];
				for (const i of entries) {
					const old = v[i];
					v[i] = old + h;
					const up = referenceLoss(config, weights, batch, g, refLora);
					v[i] = old - h;
					const down = referenceLoss(config, weights, batch, g, refLora);
					v[i] = old;
					const fd = (up - down) / (2 * h);
					const tol = 1e-4 * scale + 1e-3 * Math.abs(fd);
					expect(
						Math.abs(gpuGrad[i] - fd),
						`${pname}[${i}]: gpu ${gpuGrad[i]}, fd ${fd}`
					).toBeLessThan(tol);
					checked++;
				}
			}
			expect(checked).toBe((long ? 1 : 3) * p64.size);
			model.release();
		});
	}

	it('f32 central differences of the GPU forward itself agree with its gradient', async () => {
		// The GPU's own loss, differentiated on the GPU: f32 logprobs carry ~1e-6 of noise
		// per token (~1e-5 on the loss), so the step is large, 1e-2 (the loss is smooth on that
		// scale: h^2 L''' / 6 is ~1e-5 relative), and the noise in the quotient ~5e-4 of a
		// gradient of ~1: tolerance 1%. Observed: 4e-6 to 8e-5 relative.
		const config = TINY.qwen2;
		const { model, params, rng } = await setup(config, { rank: 4, alpha: 8 }, 9);
		const seqs = randomSequences(config.vocabSize, [6, 5], 5);
		const batch = toTokenBatch(seqs);
		const g = rng.normals(batch.B * (batch.T - 1));
		await model.forwardBackward(seqs, g);
		const grads = await model.lora!.readGrads();
		const loss = async () => {
			const { logprobs } = await model.scoreTokens(seqs);
			let s = 0;
			for (let i = 0; i < g.length; i++) if (!Number.isNaN(logprobs[i])) s += g[i] * logprobs[i];
			return s;
		};
		const h = 1e-2;
		for (const pname of [
			'base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight',
			'base_model.model.model.layers.1.mlp.up_proj.lora_B.weight',
			'base_model.model.model.layers.0.mlp.down_proj.lora_B.weight'
		]) {
			const v = params.get(pname)!;
			const gpuGrad = grads.get(pname)!;
			let i = 0; // the entry with the largest gradient: the best signal over f32 noise
			for (let j = 0; j < gpuGrad.length; j++)
				if (Math.abs(gpuGrad[j]) > Math.abs(gpuGrad[i])) i = j;
			const old = v[i];
			v[i] = old + h;
			model.lora!.write(new Map([[pname, v]]));
			const up = await loss();
			v[i] = old - h;
			model.lora!.write(new Map([[pname, v]]));
			const down = await loss();
			v[i] = old;
			model.lora!.write(new Map([[pname, v]]));
			const fd = (up - down) / (2 * h);
			expect(Math.abs(fd - gpuGrad[i]), `${pname}[${i}] gpu ${gpuGrad[i]} fd ${fd}`).toBeLessThan(
				0.01 * Math.abs(gpuGrad[i])
			);
		}
		model.release();
	});

	it('a function of the logprobs, accumulation, and padding-only entries of dLogprobs', async () => {
		const config = TINY.llama;
		const { model, rng } = await setup(config, { rank: 2 }, 4);
		const seqs = randomSequences(config.vocabSize, [5, 3], 8);
		const batch = toTokenBatch(seqs);
		const g = rng.normals(batch.B * (batch.T - 1));
		const first = await model.forwardBackward(seqs, g);
		const once = await model.lora!.readGrads();
		// The same gradient given as a function of the forward's logprobs; garbage (NaN) where
		// there is no target is ignored.
		const padded = g.slice();
		padded[1 * 4 + 2] = NaN; // sequence 1 has targets at t = 0, 1 only
		padded[1 * 4 + 3] = 1e30;
		let seen: Float32Array | undefined;
		const second = await model.forwardBackward(
			seqs,
			(lp) => {
				seen = lp;
				return padded;
			},
			{ accumulate: true }
		);
		expect(Array.from(seen!)).toEqual(Array.from(first.logprobs));
		expect(Array.from(second.logprobs)).toEqual(Array.from(first.logprobs));
		const twice = await model.lora!.readGrads();
		for (const [name, v] of once)
			expect(twice.get(name)!, name).toBeAllclose(
				v.map((x) => 2 * x),
				{ atol: 1e-7, rtol: 1e-6 }
			);
		// Without accumulate the gradients are overwritten.
		await model.forwardBackward(seqs, g);
		for (const [name, v] of await model.lora!.readGrads())
			expect(Array.from(v), name).toEqual(Array.from(once.get(name)!));
		model.release();
	});

	for (const [name, config] of [
		['Qwen3 (q/k norm)', TINY.qwen3],
		['Qwen2 (biases, untied)', TINY.qwen2]
	] as const)
		it(`${name}: keeping every layer's activations gives the gradients of recomputing them`, async () => {
			const seqs = randomSequences(config.vocabSize, [7, 4, 6], 5);
			const batch = toTokenBatch(seqs);
			const g = new Rng(9).normals(batch.B * (batch.T - 1));
			const results = [];
			for (const activations of ['recompute', 'keep'] as const) {
				const { model } = await setup(config, { rank: 4 }, 3, { activations });
				expect(model.activationPlan(batch.B, batch.T)).toBe(activations);
				const { logprobs } = await model.forwardBackward(seqs, g);
				results.push({ logprobs, grads: await model.lora!.readGrads() });
				model.release();
			}
			const [recomputed, kept] = results;
			// The same kernels on the same inputs: equal up to f32 rounding (observed: exactly).
			expect(kept.logprobs).toBeAllclose(recomputed.logprobs, { atol: 1e-6, rtol: 1e-6 });
			for (const [pname, v] of recomputed.grads) {
				const scale = v.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
				expect(scale, pname).toBeGreaterThan(1e-6);
				expect(kept.grads.get(pname)!, pname).toBeAllclose(v, { atol: 1e-6 * scale, rtol: 1e-5 });
			}
		});

	it("'auto' keeps activations only when they fit in the memory budget", async () => {
		const config = TINY.llama;
		const [B, T] = [2, 6];
		const probe = await setup(config, { rank: 2 }, 1);
		const keepBytes = probe.model.estimateMemory(B, T, 'train', true).totalBytes;
		const recomputeBytes = probe.model.estimateMemory(B, T, 'train', false).totalBytes;
		// Nothing given: WebGPU cannot say how much memory there is, so recompute.
		expect(probe.model.activationPlan(B, T)).toBe('recompute');
		probe.model.release();
		expect(keepBytes).toBeGreaterThan(recomputeBytes);
		for (const [budget, plan] of [
			[keepBytes, 'keep'],
			[keepBytes - 1, 'recompute']
		] as const) {
			const { model } = await setup(config, { rank: 2 }, 1, { memoryBudgetBytes: budget });
			expect(model.activationPlan(B, T), `budget ${budget}`).toBe(plan);
			const seqs = randomSequences(config.vocabSize, [T, T - 2], 2);
			await model.forwardBackward(seqs, new Float32Array(B * (T - 1)).fill(0.5));
			model.release();
		}
	});

	it('one AdamW step on the gradients lowers the loss', async () => {
		const config = TINY.qwen3;
		const { model } = await setup(config, { rank: 4 }, 6);
		const seqs = randomSequences(config.vocabSize, [8, 6], 3);
		const batch = toTokenBatch(seqs);
		// Maximise the mean logprob: loss = -mean(logprob), dLoss/dlogprob = -1/n.
		const count = 7 + 5;
		const g = new Float32Array(batch.B * (batch.T - 1)).fill(-1 / count);
		const meanLogprob = (lp: Float32Array) =>
			lp.reduce((s, x) => (Number.isNaN(x) ? s : s + x), 0) / count;
		const before = await model.forwardBackward(seqs, g);
		const stats = createTensor(gpu(), [4], 'f32');
		await run(gpu(), (rec) =>
			adamwStep(rec, { slots: model.lora!.slots(), stats, step: 1, lr: 1e-2 })
		);
		const after = await model.scoreTokens(seqs);
		expect(meanLogprob(after.logprobs)).toBeGreaterThan(meanLogprob(before.logprobs) + 1e-3);
		stats.release();
		model.release();
	});

	it('refuses without adapters, with a wrongly sized or non-finite dLogprobs', async () => {
		const config = TINY.llama;
		const source = MemoryWeightSource.forConfig(config, randomWeights(config, 1));
		const plain = await TransformerModel.create(gpu(), config, source);
		await expect(plain.forwardBackward([[1, 2, 3]], [0, 0])).rejects.toThrow(LoraConfigError);
		plain.release();
		const { model } = await setup(config, { rank: 2 }, 1);
		let error: unknown;
		const tally = await trackBuffers(gpu(), () =>
			model.forwardBackward([[1, 2, 3]], [0, 0, 0]).catch((e) => (error = e))
		);
		expect(String(error)).toContain('[1, 2]');
		expect(tally.created).toBe(0); // an array is checked before any work
		await expect(model.forwardBackward([[1, 2, 3]], [0, NaN])).rejects.toThrow(RangeError);
		model.release();
	});
});
