/**
 * The decode step's matmul variants (decode-layer.ts: fused skinny, per-projection
 * skinny, the tiled matmul) generate the same tokens on a tiny Qwen2 (q/k/v biases) with
 * LoRA on every projection (random B) and f16 weights, with logprobs equal to the GPU's
 * full forward (scoreTokens) within 1e-4, as generation.test.ts asks of the default path
 * (seen: ~1e-6). A missed bias or LoRA term moves logprobs by 1e-2 or more.
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../../../../src/lib/util/random';
import { parseDecodeMatmul } from '../../../../src/lib/model/transformer/decode-layer';
import { Generator } from '../../../../src/lib/model/generate/generator';
import type { GeneratedSequence } from '../../../../src/lib/model/generate/options';
import { MemoryWeightSource, randomWeights } from '../../../../src/lib/testing/random-weights';
import { TransformerModel } from '../../../../src/lib/model/transformer/transformer';
import { useGpu } from '../../../helpers/gpu';
import { TINY, randomSequences } from '../tiny-models';
import { randomizeLoraB } from '../../../helpers/lora';

describe('decode matmul variants', () => {
	const gpu = useGpu();

	it('fused, skinny (default and workgroup-memory tiling) and tiled agree with scoreTokens', async () => {
		const config = TINY.qwen2;
		const weights = randomWeights(config, 4);
		const model = await TransformerModel.create(
			gpu(),
			config,
			MemoryWeightSource.forConfig(config, weights),
			{ lora: { rank: 4 }, seed: 2, weightDtype: 'f16' }
		);
		await randomizeLoraB(model.lora!, new Rng(9), 0.3);
		const prompts = randomSequences(config.vocabSize, [5, 2, 7], 21);
		const options = { maxTokens: 4, temperature: 0 };
		const specs = [
			'tiled',
			'fused',
			'skinny',
			'fused:subgroup=0,lanes=4,rows=2',
			'fused:maxRows=2'
		];
		const outs: GeneratedSequence[][] = [];
		const dispatches: number[] = [];
		for (const spec of specs) {
			const gen = new Generator(model, { decodeMatmul: parseDecodeMatmul(spec) });
			outs.push(await gen.generate(prompts, options));
			dispatches.push(gen.session!.dispatchesPerStep);
			gen.release();
		}
		const seqs = outs[0].map((r) => [...r.promptIds, ...r.ids]);
		const { T, logprobs } = await model.scoreTokens(seqs);
		outs.forEach((out, i) => {
			expect(
				out.map((r) => r.ids),
				specs[i]
			).toEqual(outs[0].map((r) => r.ids));
			out.forEach((r, b) => {
				const from = b * (T - 1) + r.promptIds.length - 1;
				const scored = Array.from(logprobs.subarray(from, from + r.ids.length));
				expect(r.logprobs, `${specs[i]} sequence ${b}`).toBeAllclose(scored, {
					atol: 1e-4,
					rtol: 0
				});
			});
		});
		// Fused: fewer dispatches than one skinny call per product, and than the tiled path;
		// maxRows = 2 with 3 sequences takes the tiled path.
		expect(dispatches[1]).toBeLessThan(dispatches[2]);
		expect(dispatches[2]).toBeLessThan(dispatches[0]);
		expect(dispatches[4]).toBe(dispatches[0]);
		model.release();
	});

	it('parses variant specs and rejects bad ones', () => {
		expect(parseDecodeMatmul('skinny:lanes=16,cols=2,maxRows=64')).toEqual({
			mode: 'skinny',
			maxSkinnyRows: 64,
			tiling: { lanes: 16, cols: 2 }
		});
		expect(() => parseDecodeMatmul('gemm')).toThrow(RangeError);
		expect(() => parseDecodeMatmul('fused:lanes=x')).toThrow(RangeError);
		expect(() => parseDecodeMatmul('fused:width=4')).toThrow(RangeError);
	});
});
