/**
 * @file The memory estimate against what a call really allocates: every GPU buffer the
 * device creates is counted from createBuffer to destroy (weights, LoRA state, pooled
 * activations, the recorders' scratch and uniform buffers, read-back staging), and the
 * peak during forwardBackward and scoreTokens must stay within the estimate the call
 * checks, and not far under it (so neither can drift from the other unnoticed).
 */
import { describe, expect, it } from 'vitest';
import type { Gpu } from '../../../../src/lib/gpu/device';
import { MemoryWeightSource, randomWeights } from '../../../../src/lib/testing/random-weights';
import { TransformerModel } from '../../../../src/lib/model/transformer/transformer';
import type { ActivationPolicy } from '../../../../src/lib/model/transformer/transformer-options';
import type { WeightDtypePolicy } from '../../../../src/lib/model/hf/weight-dtype';
import type { ModelConfig } from '../../../../src/lib/model/types';
import { useGpu } from '../../../helpers/gpu';
import { TINY } from '../tiny-models';

/** Live bytes of every buffer the device creates while attached, and their peak. */
function trackLiveBytes(gpu: Gpu) {
	const device = gpu.device as GPUDevice & { createBuffer: GPUDevice['createBuffer'] };
	const original = device.createBuffer;
	const state = { live: 0, peak: 0 };
	device.createBuffer = function (descriptor: GPUBufferDescriptor): GPUBuffer {
		const buffer = original.call(device, descriptor);
		const size = Number(descriptor.size);
		state.live += size;
		state.peak = Math.max(state.peak, state.live);
		const destroy = buffer.destroy.bind(buffer);
		let destroyed = false;
		buffer.destroy = () => {
			if (!destroyed) state.live -= size;
			destroyed = true;
			destroy();
		};
		return buffer;
	};
	return {
		state,
		resetPeak: () => (state.peak = state.live),
		detach: () => (device.createBuffer = original)
	};
}

/** Three layers; intermediate 512 is deep enough (2 x 256) for split-K in the MLP's
 * backward, and a vocabulary of 1000 for it in the LM head's; LoRA r = 8 everywhere. */
const SMALL: ModelConfig = {
	...TINY.llama,
	vocabSize: 1000,
	hiddenSize: 32,
	intermediateSize: 512,
	numLayers: 3,
	numHeads: 2,
	numKvHeads: 1,
	headDim: 16
};

const CASES: {
	name: string;
	config: ModelConfig;
	B: number;
	T: number;
	maxChunkBytes?: number;
	activations?: ActivationPolicy;
	weightDtype?: WeightDtypePolicy;
}[] = [
	{ name: 'llama 3 layers, 2 x 32', config: SMALL, B: 2, T: 32 },
	{
		name: 'llama 3 layers, 2 x 32, activations kept',
		config: SMALL,
		B: 2,
		T: 32,
		activations: 'keep'
	},
	{ name: 'llama 3 layers, 1 x 7', config: SMALL, B: 1, T: 7 },
	{ name: 'qwen3 (q/k norm), 3 x 20', config: TINY.qwen3, B: 3, T: 20 },
	// An untied lm_head in 3 weight chunks: the logits walk several pieces.
	{ name: 'qwen2 chunked head, 2 x 16', config: TINY.qwen2, B: 2, T: 16, maxChunkBytes: 4096 },
	// f16 matrices (half the weights' bytes) and an f16 lm_head in 3 chunks, its pieces
	// copied at 2 bytes per element.
	{
		name: 'qwen2 f16 weights, chunked head, 2 x 16',
		config: TINY.qwen2,
		B: 2,
		T: 16,
		maxChunkBytes: 100 * 36 * 2, // 100 rows of 36 halves
		weightDtype: 'f16'
	}
];

describe('memory estimate vs the peak of live GPU buffers', () => {
	const gpu = useGpu();

	for (const c of CASES) {
		it(`${c.name}: peak <= estimate <= 1.5 x peak, training then scoring`, async () => {
			const g = gpu();
			const mem = trackLiveBytes(g);
			const model = await TransformerModel.create(
				g,
				c.config,
				MemoryWeightSource.forConfig(c.config, randomWeights(c.config, 3)),
				{
					lora: { rank: 8 },
					seed: 1,
					maxChunkBytes: c.maxChunkBytes,
					activations: c.activations,
					weightDtype: c.weightDtype
				}
			);
			if (c.weightDtype === 'f16') expect(model.weights.lmHead.chunks).toHaveLength(3);
			try {
				const ids = Array.from({ length: c.B }, (_, b) =>
					Array.from({ length: c.T }, (_, t) => (b * 131 + t * 17) % c.config.vocabSize)
				);
				const dLogprobs = new Float32Array(c.B * (c.T - 1)).fill(0.25);
				for (const mode of ['train', 'score', 'train'] as const) {
					await g.device.queue.onSubmittedWorkDone();
					// The estimate the call itself checks (the pool's kept buffers included).
					const keep = model.activationPlan(c.B, c.T) === 'keep';
					const estimate = model.estimateMemory(c.B, c.T, mode, keep).totalBytes;
					mem.resetPeak();
					if (mode === 'train') await model.forwardBackward(ids, dLogprobs);
					else await model.scoreTokens(ids);
					const peak = mem.state.peak;
					expect(peak, `${mode}: peak ${peak} vs estimate ${estimate}`).toBeLessThanOrEqual(
						estimate
					);
					expect(estimate, `${mode}: estimate ${estimate} vs peak ${peak}`).toBeLessThanOrEqual(
						1.5 * peak
					);
				}
			} finally {
				model.release();
				mem.detach();
			}
		});
	}
});
