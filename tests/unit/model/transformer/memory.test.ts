import { describe, expect, it } from 'vitest';
import { ModelTooLargeError } from '../../../../src/lib/model/errors';
import { resolveLoraConfig } from '../../../../src/lib/model/transformer/lora';
import {
	checkModelMemory,
	estimateModelMemory
} from '../../../../src/lib/model/transformer/memory';
import { MemoryWeightSource, randomWeights } from '../../../../src/lib/testing/random-weights';
import { TransformerModel } from '../../../../src/lib/model/transformer/transformer';
import type { ModelConfig } from '../../../../src/lib/model/types';
import { hubModel, hubModelConfig } from '../../../../src/lib/model/hf/hub-models';
import { planWeightDtypes } from '../../../../src/lib/model/hf/weight-dtype';
import { useGpu } from '../../../helpers/gpu';
import { TINY } from '../tiny-models';
import { trackBuffers } from './track-buffers';

/** Qwen2.5-0.5B as published (hub-models.ts), counted in f32. */
const QWEN25_05B: ModelConfig = { ...hubModelConfig(hubModel('qwen2.5-0.5b')!), dtype: 'float32' };

const GIB = 2 ** 30;

describe('memory estimate', () => {
	const gpu = useGpu();

	it('counts Qwen2.5-0.5B\u2019s 494M f32 parameters and its LoRA state', () => {
		const lora = resolveLoraConfig();
		const e = estimateModelMemory(QWEN25_05B, { lora });
		const weights = e.lines[0];
		// 494,032,768 parameters (tied) x 4 bytes.
		expect(weights.bytes).toBe(494032768 * 4);
		// r = 8 on q, k, v, o, gate, up, down: 8 x (896+896 + 2 x (896+128) + 896+896 +
		// 3 x (896+4864)) = 183,296 per layer, 4,399,104 over 24 layers; 4 tensors x 4 B each.
		expect(e.lines[1].bytes).toBe((8798208 / 2) * 4 * 4);
		expect(e.totalBytes).toBe(weights.bytes + e.lines[1].bytes);
	});

	it('counts f16 matrices at 2 bytes: auto on a bf16 config, f16 forced, per-tensor dtypes', () => {
		const limits = { maxStorageBufferBindingSize: 128 * 2 ** 20, maxBufferSize: 256 * 2 ** 20 };
		const bf16 = { ...QWEN25_05B, dtype: 'bfloat16' as const };
		// Norms and biases stay f32: 24 x (2 x 896 + 896 + 128 + 128) + 896 = 71,552 values;
		// the other 493,961,216 (projections and the tied embedding) are f16.
		const f16Bytes = 493961216 * 2 + 71552 * 4;
		const auto = estimateModelMemory(bf16, { weightDtype: 'auto', limits }).lines[0];
		expect(auto.bytes).toBe(f16Bytes);
		// 24 x 7 projections + the embedding; 24 x (2 norms + 3 biases) + the final norm.
		expect(auto.what).toBe('weights (169 tensors f16, 121 f32)');
		// The embedding's chunks: 128 MiB / (896 x 2 B) = 74,898 rows, twice f32's.
		expect(auto.largestBuffer).toBe(74898 * 896 * 2);
		expect(estimateModelMemory(QWEN25_05B, { weightDtype: 'f16' }).lines[0].bytes).toBe(f16Bytes);
		// An f32 checkpoint under auto, an explicit 'f32', and no option: all f32.
		for (const e of [
			estimateModelMemory(QWEN25_05B, { weightDtype: 'auto' }),
			estimateModelMemory(bf16, { weightDtype: 'f32' }),
			estimateModelMemory(bf16)
		]) {
			expect(e.lines[0].bytes).toBe(494032768 * 4);
			expect(e.lines[0].what).toBe('weights (f32)');
		}
		// Per-tensor dtypes (ModelWeights.dtypes): one matrix kept in f32 adds 2 B per value.
		const dtypes = {
			...planWeightDtypes(bf16),
			'model.layers.3.mlp.up_proj.weight': 'f32' as const
		};
		const mixed = estimateModelMemory(bf16, { weightDtype: dtypes }).lines[0];
		expect(mixed.bytes).toBe(f16Bytes + 4864 * 896 * 2);
	});

	it('training activations at 8 x 512 are ~1 GB with recompute, itemised', () => {
		const e = estimateModelMemory(QWEN25_05B, {
			lora: resolveLoraConfig(),
			batch: { B: 8, T: 512 },
			mode: 'train'
		});
		const acts = e.lines.slice(2).reduce((s, l) => s + l.bytes, 0);
		expect(acts).toBeGreaterThan(0.9 * GIB);
		expect(acts).toBeLessThan(1.3 * GIB);
		const ckpt = e.lines.find((l) => l.what.startsWith('residual-stream checkpoints'))!;
		expect(ckpt.bytes).toBe(25 * 8 * 512 * 896 * 4);
		const score = estimateModelMemory(QWEN25_05B, { batch: { B: 8, T: 512 }, mode: 'score' });
		expect(score.totalBytes).toBeLessThan(e.totalBytes);
	});

	it('refuses a buffer over the device\u2019s per-buffer limit, with the numbers', () => {
		const limits = { maxStorageBufferBindingSize: 128 * 2 ** 20, maxBufferSize: 256 * 2 ** 20 };
		// The 545 MB embedding is chunked, so the weights fit; 64 x 2048 tokens of gate
		// activations (4864 wide: 2.5 GB) do not.
		const ok = estimateModelMemory(QWEN25_05B, { limits });
		expect(() => checkModelMemory(ok, limits, undefined, 'the model')).not.toThrow();
		const big = estimateModelMemory(QWEN25_05B, {
			limits,
			batch: { B: 64, T: 2048 },
			mode: 'score'
		});
		let error: ModelTooLargeError | undefined;
		try {
			checkModelMemory(big, limits, undefined, 'Qwen2 on 64 x 2048');
		} catch (e) {
			error = e as ModelTooLargeError;
		}
		expect(error).toBeInstanceOf(ModelTooLargeError);
		expect(error!.kind).toBe('over-memory');
		expect(error!.message).toMatch(/one layer.s activations: 2\.\d+ GiB/);
		expect(error!.message).toContain('128.0 MiB');
	});

	it('refuses a model over the budget before allocating anything, with the numbers', async () => {
		const config = TINY.qwen2;
		const source = MemoryWeightSource.forConfig(config, randomWeights(config, 1));
		const need = estimateModelMemory(config).totalBytes;
		let error: unknown;
		const tally = await trackBuffers(gpu(), async () => {
			try {
				await TransformerModel.create(gpu(), config, source, { memoryBudgetBytes: need - 1 });
			} catch (e) {
				error = e;
			}
		});
		expect(error).toBeInstanceOf(ModelTooLargeError);
		expect((error as ModelTooLargeError).totalBytes).toBe(need);
		expect((error as Error).message).toContain(`weights (f32): ${need} B`);
		expect(tally.created).toBe(0);
	});

	it('refuses a batch over the budget before allocating its buffers; smaller ones still run', async () => {
		const config = TINY.llama;
		const source = MemoryWeightSource.forConfig(config, randomWeights(config, 1));
		const lora = resolveLoraConfig({ rank: 2 });
		const fixed = estimateModelMemory(config, { lora }).totalBytes;
		const small = estimateModelMemory(config, { lora, batch: { B: 1, T: 4 }, mode: 'train' });
		const model = await TransformerModel.create(gpu(), config, source, {
			lora,
			memoryBudgetBytes: small.totalBytes
		});
		expect(fixed).toBeLessThan(small.totalBytes);
		const long = Array.from({ length: 64 }, (_, i) => i);
		let error: unknown;
		const tally = await trackBuffers(gpu(), async () => {
			try {
				await model.forwardBackward([long, long], new Float32Array(2 * 63));
			} catch (e) {
				error = e;
			}
		});
		expect(error).toBeInstanceOf(ModelTooLargeError);
		expect((error as Error).message).toMatch(/batch of 2 x 64 tokens \(train\)/);
		expect(tally.created).toBe(0);
		const ok = await model.forwardBackward([[1, 2, 3, 4]], [0.5, -1, 2]);
		expect(ok.logprobs.length).toBe(3);
		model.release();
	});
});
