/**
 * A preset on a Hub model (presetOn) and the memory a run of it will need (planRunMemory),
 * before any download: the published configs of the catalog (hub-models.ts).
 */
import { describe, expect, it } from 'vitest';
import {
	HUB_MODELS,
	downloadSize,
	hubModel,
	hubModelAt,
	hubModelConfig,
	hubUrl
} from '../../../src/lib/model/hf/hub-models';
import { kvCacheBytes } from '../../../src/lib/model/transformer/kv-cache';
import { PRETRAINED_SETUP, planRunMemory, preset, presetOn } from '../../../src/lib/run';

const ROOMY = { maxStorageBufferBindingSize: 2 ** 31 - 4, maxBufferSize: 2 ** 40 };
/** WebGPU's default limits: what a page gets without asking. */
const DEFAULT_LIMITS = { maxStorageBufferBindingSize: 2 ** 27, maxBufferSize: 2 ** 28 };
const GIB = 2 ** 30;

describe('a preset on a Hub model', () => {
	it('keeps the preset for its bundled model, under any root', () => {
		expect(presetOn('tictactoe', '/models/tabrl-tiny/')).toEqual(preset('tictactoe'));
		expect(presetOn('2048', 'https://x.test/app/models/tabrl-tiny-2048')).toEqual(preset('2048'));
	});

	it('drops the warm start and SFT, trains a small LoRA with room for longer replies', () => {
		const url = hubUrl('Qwen/Qwen2.5-0.5B-Instruct');
		const r = presetOn('tictactoe', url);
		expect(r.baseModel).toBe(url);
		expect(r.warmStart).toBeNull();
		expect(r.sft).toBeNull();
		expect(r.lora).toEqual(PRETRAINED_SETUP.lora);
		expect(r.grpo).toMatchObject({ maxTokens: 128, tokenBudget: 4096, learningRate: 5e-5 });
		expect(r.maxContext).toBe(1024);
		// the rest of the preset stays: its games per step, its evaluations
		expect(r.grpo.groupSize).toBe(preset('tictactoe').grpo.groupSize);
		expect(r.eval).toEqual(preset('tictactoe').eval);
		// auto may shrink a Hub model's 2048 step to one group; the bundled preset keeps its floor
		expect(preset('2048').grpo.autoSize?.minGroups).toBe(4);
		expect(presetOn('2048', url).grpo.autoSize).toEqual({
			...preset('2048').grpo.autoSize,
			minGroups: 1
		});
	});

	it('knows the catalog by key and by URL; a download weighs its parameters in bf16', () => {
		expect(hubModelAt(hubUrl('Qwen/Qwen3-0.6B'))?.key).toBe('qwen3-0.6b');
		expect(hubModelAt('https://huggingface.co/Qwen/Qwen3-0.6B')?.key).toBe('qwen3-0.6b');
		expect(hubModelAt('https://example.com/Qwen/Qwen3-0.6B/')).toBeUndefined();
		// the model cards' counts: 135M (tied embeddings counted once), 494M, 596M
		const params = (key: string) => downloadSize(hubModelConfig(hubModel(key)!)).parameters;
		expect(params('smollm2-135m') / 1e6).toBeCloseTo(134.5, 0);
		expect(params('qwen2.5-0.5b') / 1e6).toBeCloseTo(494.0, 0);
		expect(params('qwen3-0.6b') / 1e6).toBeCloseTo(596.0, 0);
		const size = downloadSize(hubModelConfig(hubModel('smollm2-135m')!));
		expect(size.bytes).toBe(size.parameters * 2);
	});
});

describe('the memory a run will need', () => {
	it('adds the weights, LoRA state, one update micro-batch and a small decode batch', () => {
		for (const m of HUB_MODELS) {
			const config = hubModelConfig(m);
			const recipe = presetOn('tictactoe', hubUrl(m.id));
			const plan = planRunMemory(config, recipe, ROOMY);
			const whats = plan.estimate.lines.map((l) => l.what).join('; ');
			expect(whats, m.key).toMatch(/weights/i);
			expect(whats, m.key).toMatch(/KV cache of 2 games/);
			const kv = plan.estimate.lines.at(-1)!;
			expect(kv.bytes).toBe(kvCacheBytes(config, 2, 1024));
			expect(plan.estimate.totalBytes).toBe(plan.estimate.lines.reduce((s, l) => s + l.bytes, 0));
			// f16 weights at least, and under 3 GiB at these sizes
			expect(plan.estimate.totalBytes, m.key).toBeGreaterThan(downloadSize(config).bytes);
			expect(plan.estimate.totalBytes, m.key).toBeLessThan(3 * GIB);
			expect(plan.fits).toBe(true);
			expect(plan.fits && planRunMemory(config, recipe, ROOMY, GIB / 4).fits).toBe(false);
		}
	});

	it("adds, up to its caps, the decode batch of the step's games and their prefix store", () => {
		const config = hubModelConfig(hubModel('qwen3-0.6b')!);
		const S = 1024;
		const perGame = kvCacheBytes(config, 1, S);
		// 64 games of 1024 tokens: 229 KiB a token would take 14 GiB each; the decode batch
		// stays within 1 GiB (4 games), the store within 2 GiB (9 games)
		const recipe = presetOn('tictactoe', hubUrl('Qwen/Qwen3-0.6B'));
		expect(recipe.grpo.groups * recipe.grpo.groupSize).toBe(64);
		const plan = planRunMemory(config, recipe, ROOMY);
		const [decode, store, prefill] = plan.caches;
		expect(decode.what).toMatch(/^KV cache of 4 games decoding at once \(up to 1024 tokens each\)/);
		expect(decode.bytes).toBe(4 * perGame);
		expect(store.what).toMatch(/of 9 games kept for their next turn/);
		expect(store.bytes).toBe(9 * perGame);
		// and the prompts prefilled together: 6485 tokens for Qwen3's width, 6 x 1024
		expect(prefill.what).toMatch(/^prompts prefilled together \(6 x 1024 tokens/);
		expect(prefill.bytes).toBeGreaterThan(100 * 2 ** 20);
		expect(prefill.bytes).toBeLessThan(2 * GIB);
		const floor = plan.estimate.lines.at(-1)!.bytes;
		expect(plan.upToBytes).toBe(plan.estimate.totalBytes - floor + 13 * perGame + prefill.bytes);
		// the bundled model's few short games: the caches of all of them, uncapped
		const tiny = { ...config, numLayers: 2, numKvHeads: 1, headDim: 64 };
		const small = planRunMemory(tiny, { ...recipe, maxContext: 256 }, ROOMY);
		expect(small.caches.slice(0, 2).map((l) => l.bytes)).toEqual(
			[64, 64].map((n) => kvCacheBytes(tiny, n, 256))
		);
	});

	it('counts the adapter merged into f32 projections for the games, never into f16 ones', () => {
		const hub = hubModelConfig(hubModel('smollm2-135m')!);
		// the bundled model's shape, stored in f32: 6 layers of 4 x [256, 256] + 3 x [768, 256]
		const tiny = {
			...hub,
			dtype: 'float32' as const,
			hiddenSize: 256,
			intermediateSize: 768,
			numLayers: 6,
			numHeads: 4,
			numKvHeads: 4,
			headDim: 64
		};
		const merged = (config: typeof hub) =>
			planRunMemory(config, preset('tictactoe'), ROOMY).estimate.lines.find((l) =>
				/adapter merged in/.test(l.what)
			);
		expect(merged(tiny)?.bytes).toBe(6 * (4 * 256 * 256 + 3 * 768 * 256) * 4);
		expect(merged(tiny)?.largestBuffer).toBe(768 * 256 * 4);
		// Hub checkpoints are bf16: kept in f16, never merged; nor a copy past 64 MiB
		expect(merged(hub)).toBeUndefined();
		expect(merged({ ...hub, dtype: 'float32' })).toBeUndefined();
	});

	it("fits WebGPU's default limits (the embedding and logits come in chunks); names what a smaller one cannot hold", () => {
		for (const m of HUB_MODELS) {
			const plan = planRunMemory(
				hubModelConfig(m),
				presetOn('tictactoe', hubUrl(m.id)),
				DEFAULT_LIMITS
			);
			expect(plan.overBuffers, m.key).toEqual([]);
			expect(plan.fits, m.key).toBe(true);
		}
		const qwen = hubModelConfig(hubModel('qwen2.5-0.5b')!);
		const small = { maxStorageBufferBindingSize: 2 ** 20, maxBufferSize: 2 ** 28 };
		const plan = planRunMemory(qwen, presetOn('tictactoe', hubUrl('x/y')), small);
		expect(plan.fits).toBe(false);
		// the residual-stream checkpoints hold [4096, 896] f32 each: 14 MiB a buffer
		expect(plan.overBuffers.map((l) => l.what)).toContain(
			'residual-stream checkpoints (25 x [4096, 896])'
		);
		for (const l of plan.overBuffers) expect(l.largestBuffer).toBeGreaterThan(2 ** 20);
	});
});
