/**
 * The adapter merged into copies of its projections for generation (merged-lora.ts): the
 * merged generator (the default) makes what one applying the live adapter makes (greedy and
 * T = 1: ids exact, logprobs within 1e-4: the two sum W x + s B A x in different orders, f32),
 * on the fused decode path (6 sequences) and the tiled one (40), follows the adapter after it
 * moves, records fewer dispatches a step, and is not made for f16 projections or past its cap.
 * The update uses the copy while it holds the adapter (x W'^T, dy W'): its logprobs within
 * 2e-5 and LoRA gradients within 1e-4 of the largest + 1e-3 relative of the live adapter's.
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../../../../src/lib/util/random';
import { Generator } from '../../../../src/lib/model/generate/generator';
import { MergedLora, mergedLoraBytes } from '../../../../src/lib/model/generate/merged-lora';
import type { GeneratedSequence } from '../../../../src/lib/model/generate/options';
import { MemoryWeightSource, randomWeights } from '../../../../src/lib/testing/random-weights';
import { TransformerModel } from '../../../../src/lib/model/transformer/transformer';
import { useGpu } from '../../../helpers/gpu';
import { randomizeLoraB } from '../../../helpers/lora';
import { TINY, randomSequences } from '../tiny-models';

const TOL = { atol: 1e-4, rtol: 0 };

describe('generation with the adapter merged in', () => {
	const gpu = useGpu();
	const config = { ...TINY.llama, maxPositionEmbeddings: 256 };
	const source = () => MemoryWeightSource.forConfig(config, randomWeights(config, 7));

	function expectSame(a: GeneratedSequence[], b: GeneratedSequence[]) {
		expect(a.map((r) => r.ids)).toEqual(b.map((r) => r.ids));
		a.forEach((r, i) => expect(r.logprobs).toBeAllclose(b[i].logprobs, TOL));
	}

	it('generates what the live adapter does, before and after the adapter moves', async () => {
		const model = await TransformerModel.create(gpu(), config, source(), { lora: { rank: 4 } });
		await randomizeLoraB(model.lora!, new Rng(3), 0.3);
		const options = { maxContext: 256, prefixCache: false };
		const merged = new Generator(model, options);
		const live = new Generator(model, { ...options, mergeLora: false });
		try {
			const lengths = (n: number) => Array.from({ length: n }, (_, i) => 6 + (i % 9));
			const calls = [
				{ prompts: randomSequences(config.vocabSize, lengths(6), 1), temperature: 0 },
				{ prompts: randomSequences(config.vocabSize, lengths(40), 2), temperature: 1 }
			];
			const before: GeneratedSequence[][] = [];
			for (const [i, { prompts, temperature }] of calls.entries()) {
				const call = { maxTokens: 6, temperature, seed: 20 + i, ignoreEos: true };
				const m = await merged.generate(prompts, call);
				expectSame(m, await live.generate(prompts, call));
				before.push(m);
				// the products merging saves a step: past 32 rows (tiled) the live adapter's two a
				// projection; up to 32 (fused) its x A^T dispatch of each of the layer's four calls
				// (q/k/v, o, gate/up, down)
				const targets = model.lora!.config.targetModules.length;
				const saved = (prompts.length > 32 ? 2 * targets : 4) * config.numLayers;
				const step = (g: Generator) => g.session!.dispatchesPerStep;
				expect(step(live) - step(merged)).toBe(saved);
			}
			// an update: the merged copies follow the adapter's new values
			await randomizeLoraB(model.lora!, new Rng(4), 0.3);
			for (const [i, { prompts, temperature }] of calls.entries()) {
				const call = { maxTokens: 6, temperature, seed: 20 + i, ignoreEos: true };
				const m = await merged.generate(prompts, call);
				expectSame(m, await live.generate(prompts, call));
				expect(m.map((r) => r.logprobs)).not.toEqual(before[i].map((r) => r.logprobs));
			}
		} finally {
			merged.release();
			live.release();
			model.release();
		}
	});

	it('the update uses the copy while it holds the adapter: the same logprobs and gradients', async () => {
		const model = await TransformerModel.create(gpu(), config, source(), { lora: { rank: 4 } });
		const rng = new Rng(5);
		await randomizeLoraB(model.lora!, rng, 0.3);
		const generator = new Generator(model, { maxContext: 256, prefixCache: false });
		const seqs = randomSequences(config.vocabSize, [9, 6, 12], 5);
		const g = rng.normals(3 * 11);
		const grads = async () => {
			const { logprobs } = await model.forwardBackward(seqs, g);
			return { logprobs, grads: await model.lora!.readGrads() };
		};
		// not yet synced: the live adapter
		expect(model.mergedWeights?.current).toBe(false);
		const live = await grads();
		await generator.generate([[1, 2, 3]], { maxTokens: 1, temperature: 0 });
		expect(model.mergedWeights?.current).toBe(true);
		const merged = await grads();
		expect(merged.logprobs).toBeAllclose(live.logprobs, { atol: 2e-5, rtol: 1e-5 });
		for (const [name, v] of live.grads) {
			const scale = v.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
			expect(scale, name).toBeGreaterThan(1e-6);
			expect(merged.grads.get(name)!, name).toBeAllclose(v, { atol: 1e-4 * scale, rtol: 1e-3 });
		}
		// the copy is what the update reads: one without the adapter's term changes the logprobs
		const real = model.mergedWeights!;
		model.useMergedWeights({ current: true, layers: model.weights.layers });
		const { logprobs } = await model.forwardBackward(seqs, g);
		const diff = logprobs.reduce((m, x, i) => Math.max(m, Math.abs(x - live.logprobs[i]) || 0), 0);
		expect(diff).toBeGreaterThan(1e-3);
		model.useMergedWeights(real);
		// an update makes the copy stale until the next rollout; release detaches it
		await randomizeLoraB(model.lora!, rng, 0.3);
		expect(model.mergedWeights?.current).toBe(false);
		generator.release();
		expect(model.mergedWeights).toBeUndefined();
		model.release();
	});

	it('is made only for f32 projections within its cap', async () => {
		const lora = { lora: { rank: 4 } };
		const wide = await TransformerModel.create(gpu(), config, source(), lora);
		const half = await TransformerModel.create(gpu(), config, source(), {
			...lora,
			weightDtype: 'f16'
		});
		const bare = await TransformerModel.create(gpu(), config, source());
		try {
			const bytes = mergedLoraBytes(wide)!;
			// every projection of every layer, f32
			const perLayer = wide.weights.layers[0].proj;
			const layerBytes = Object.values(perLayer).reduce((s, w) => s + w.size * 4, 0);
			expect(bytes).toBe(layerBytes * config.numLayers);
			const m = MergedLora.create(wide)!;
			expect(m.bytes).toBe(bytes);
			m.release();
			expect(MergedLora.create(wide, bytes - 1)).toBeUndefined();
			expect(mergedLoraBytes(half)).toBeUndefined();
			expect(MergedLora.create(half)).toBeUndefined();
			expect(MergedLora.create(bare)).toBeUndefined();
		} finally {
			for (const model of [wide, half, bare]) model.release();
		}
	});
});
