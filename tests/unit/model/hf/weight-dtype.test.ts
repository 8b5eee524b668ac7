/**
 * Weights kept in f16: the policy, the bf16 -> f16 check, and F16 / BF16 models that load
 * f16 under 'auto' and give the logprobs, LoRA gradients and decoded tokens of the same file
 * widened to f32 (atol 1e-5; seen bit-identical on SwiftShader: every kernel computes in
 * f32 from the same values).
 */
import { describe, expect, it } from 'vitest';
import { f16BitsToF32, roundToF16 } from '../../../../src/lib/gpu/half';
import { Rng } from '../../../../src/lib/util/random';
import { toTokenBatch } from '../../../../src/lib/model/transformer/batch';
import { Generator } from '../../../../src/lib/model/generate/generator';
import { memoryByteSource } from '../../../../src/lib/model/hf/byte-source';
import { MemoryWeightSource, randomWeights } from '../../../../src/lib/testing/random-weights';
import { referenceLogprobs } from '../../../../src/lib/testing/reference';
import { parseSafetensorsHeader } from '../../../../src/lib/model/hf/safetensors';
import { SafetensorsWeights } from '../../../../src/lib/model/hf/safetensors-weights';
import {
	encodeSafetensors,
	f32ToBf16Bits,
	roundToDType,
	type WritableDType
} from '../../../../src/lib/model/hf/safetensors-writer';
import { TransformerModel } from '../../../../src/lib/model/transformer/transformer';
import type { TransformerOptions } from '../../../../src/lib/model/transformer/transformer-options';
import type { ModelConfig, WeightSource } from '../../../../src/lib/model/types';
import {
	bf16BitsToF16,
	checkWeightDtypePolicy,
	F16_MAX_RELATIVE_ERROR,
	f32ToF16,
	mayBeF16,
	planWeightDtypes
} from '../../../../src/lib/model/hf/weight-dtype';
import type { ModelWeights } from '../../../../src/lib/model/hf/weights';
import { weightSpecs } from '../../../../src/lib/model/hf/weight-spec';
import { useGpu } from '../../../helpers/gpu';
import { TINY, randomSequences } from '../tiny-models';
import { randomizeLoraB } from '../../../helpers/lora';

const LOGPROB_TOL = { atol: 3e-5, rtol: 1e-5 };
const SAME_LOGPROBS = { atol: 1e-5, rtol: 0 };

/** Qwen2 shape: q/k/v biases (f32 always) and an untied lm_head (a second f16 matrix). */
const CONFIG: ModelConfig = TINY.qwen2;

/** The tensors rounded to `dtype`, as a single-file safetensors WeightSource in memory. */
function fileSource(
	config: ModelConfig,
	tensors: Map<string, Float32Array>,
	dtype: WritableDType
): { source: SafetensorsWeights; values: Map<string, Float32Array> } {
	const values = new Map([...tensors].map(([n, v]) => [n, roundToDType(v, dtype)]));
	const bytes = encodeSafetensors(
		weightSpecs(config).map((s) => ({
			name: s.name,
			dtype,
			shape: s.shape,
			data: values.get(s.name)!
		}))
	);
	const header = parseSafetensorsHeader(bytes, 'model.safetensors', bytes.length);
	const source = new SafetensorsWeights(
		[header],
		new Map([['model.safetensors', memoryByteSource(bytes)]])
	);
	return { source, values };
}

/** Every tensor of the weights, its dtype and buffer size (a tied lm_head once). */
function tensorsOf(w: ModelWeights) {
	const out: { dtype: string; bytes: number }[] = [];
	for (const m of new Set([w.embed, w.lmHead]))
		for (const c of m.chunks) out.push({ dtype: c.tensor.dtype, bytes: c.tensor.buffer.size });
	out.push({ dtype: w.finalNorm.dtype, bytes: w.finalNorm.buffer.size });
	for (const l of w.layers)
		for (const t of [
			l.inputNorm,
			l.postNorm,
			l.qNorm,
			l.kNorm,
			...Object.values(l.proj),
			...Object.values(l.bias)
		])
			if (t) out.push({ dtype: t.dtype, bytes: t.buffer.size });
	return out;
}

/** Bytes of the weights with the matrices at `matrixBytes` per element, the rest at 4. */
function expectedBytes(config: ModelConfig, matrixBytes: number): number {
	return weightSpecs(config).reduce(
		(s, w) => s + (mayBeF16(w.name) ? matrixBytes : 4) * w.shape.reduce((a, b) => a * b, 1),
		0
	);
}

describe('weight dtype policy and conversion (host)', () => {
	it('plans f16 for f16/bf16 matrices under auto, never for norms and biases', () => {
		const config = { ...CONFIG, dtype: 'bfloat16' as const };
		const auto = planWeightDtypes(config);
		expect(auto['model.embed_tokens.weight']).toBe('f16');
		expect(auto['lm_head.weight']).toBe('f16');
		expect(auto['model.layers.1.mlp.down_proj.weight']).toBe('f16');
		expect(auto['model.layers.0.self_attn.q_proj.bias']).toBe('f32');
		expect(auto['model.layers.0.input_layernorm.weight']).toBe('f32');
		expect(auto['model.norm.weight']).toBe('f32');
		// The stored dtypes win over config.dtype: an f32 tensor stays f32 under auto.
		const stored = [{ name: 'lm_head.weight', dtype: 'float32' as const, shape: [] }];
		expect(planWeightDtypes(config, 'auto', stored)['lm_head.weight']).toBe('f32');
		const f32File = { ...CONFIG, dtype: 'float32' as const };
		expect(Object.values(planWeightDtypes(f32File)).every((d) => d === 'f32')).toBe(true);
		const forced = planWeightDtypes(f32File, 'f16');
		expect(forced['model.layers.0.mlp.up_proj.weight']).toBe('f16');
		expect(forced['model.layers.0.self_attn.k_proj.bias']).toBe('f32');
		expect(Object.values(planWeightDtypes(config, 'f32')).every((d) => d === 'f32')).toBe(true);
		expect(() => checkWeightDtypePolicy('bf16')).toThrow(RangeError);
		expect(() => planWeightDtypes(config, 'fp16' as never)).toThrow(RangeError);
	});

	it('bf16 -> f16 is exact inside f16\u2019s range, and measures overflow and flushes', () => {
		const bf16 = (xs: number[]) => Uint16Array.from(xs, f32ToBf16Bits);
		// Normal f16 values and bf16 subnormal-range values down to 2^-17: all exact.
		// 65280 is the largest bf16 value under 65504 (bf16's spacing there is 256); the rest
		// are rounded to bf16 first, as a file holds them.
		const exact = roundToDType([0, -0, 1, -2.5, 0.0078125, 65280, -3e-5, 2 ** -17, 1e-5], 'BF16');
		const a = bf16BitsToF16(bf16(Array.from(exact)));
		expect(a.relativeError).toBe(0);
		expect(Array.from(a.bits, f16BitsToF32)).toEqual(Array.from(exact));
		// Over 65504: infinite error, whatever else the tensor holds.
		expect(bf16BitsToF16(bf16([0.5, 1e5])).relativeError).toBe(Infinity);
		// Values under 2^-17 round to multiples of 2^-24: fine next to a large value (error
		// <= 2^-25 against max 1), not when they are the whole tensor.
		const small = 1.234e-6;
		expect(bf16BitsToF16(bf16([1, small])).relativeError).toBeLessThanOrEqual(2 ** -25);
		const tiny = bf16BitsToF16(bf16([small, -small / 3]));
		expect(tiny.relativeError).toBeGreaterThan(F16_MAX_RELATIVE_ERROR);
		// inf and NaN are kept and do not count.
		const special = bf16BitsToF16(bf16([Infinity, NaN, 2]));
		expect(special.relativeError).toBe(0);
		expect(special.bits[0]).toBe(0x7c00);
		expect(special.bits[1] & 0x7c00).toBe(0x7c00);
		// f32 -> f16 rounds: its error is at most half an f16 ulp of the largest value.
		const f = f32ToF16(Float32Array.of(1 + 2 ** -12, 0.3, -0.7));
		expect(f.relativeError).toBeGreaterThan(0);
		expect(f.relativeError).toBeLessThanOrEqual(2 ** -11);
		expect(f32ToF16([]).relativeError).toBe(0);
	});
});

describe('f16 weights on the GPU', () => {
	const gpu = useGpu();
	const seqs = randomSequences(CONFIG.vocabSize - 1, [9, 4, 7], 5); // never the last id
	const base = randomWeights(CONFIG, 4);

	async function load(source: WeightSource, options: TransformerOptions = {}) {
		return TransformerModel.create(gpu(), CONFIG, source, options);
	}

	for (const dtype of ['F16', 'BF16'] as const) {
		it(`${dtype} file: f16 matrices under auto, half the memory, the f32-widened logprobs`, async () => {
			const { source, values } = fileSource(CONFIG, base, dtype);
			const half = await load(source);
			const wide = await load(source, { weightDtype: 'f32' });
			try {
				const w = half.weights;
				expect(w.embed.dtype).toBe('f16');
				expect(w.lmHead.dtype).toBe('f16');
				expect(w.embed.chunks[0].tensor.dtype).toBe('f16');
				expect(w.layers[1].proj.gate_proj.dtype).toBe('f16');
				expect(w.layers[0].bias.q_proj!.dtype).toBe('f32');
				expect(w.layers[0].inputNorm.dtype).toBe('f32');
				expect(w.keptF32).toEqual([]);
				for (const [name, d] of Object.entries(w.dtypes))
					expect(d, name).toBe(mayBeF16(name) ? 'f16' : 'f32');
				expect(Object.values(wide.weights.dtypes).every((d) => d === 'f32')).toBe(true);
				// Bytes as counted and as allocated (buffers are padded to 4 bytes).
				expect(w.bytes).toBe(expectedBytes(CONFIG, 2));
				expect(wide.weights.bytes).toBe(expectedBytes(CONFIG, 4));
				const gpuBytes = (m: ModelWeights) => tensorsOf(m).reduce((s, t) => s + t.bytes, 0);
				expect(gpuBytes(w) / gpuBytes(wide.weights)).toBeLessThan(0.52);
				expect(gpuBytes(w) / gpuBytes(wide.weights)).toBeGreaterThan(0.5);
				// The estimate counts what the upload chose.
				const estimate = half.estimateMemory(1, 8, 'score').lines[0];
				expect(estimate.bytes).toBe(w.bytes);
				expect(estimate.what).toMatch(/f16/);

				const a = await half.scoreTokens(seqs);
				const b = await wide.scoreTokens(seqs);
				expect(a.logprobs).toBeAllclose(b.logprobs, SAME_LOGPROBS);
				const ref = referenceLogprobs(CONFIG, values, toTokenBatch(seqs));
				expect(a.logprobs).toBeAllclose(ref, LOGPROB_TOL);
			} finally {
				half.release();
				wide.release();
			}
		});
	}

	it('generation (decode path, chunked f16 lm_head) gives the f32-widened model\u2019s tokens', async () => {
		const { source } = fileSource(CONFIG, base, 'F16');
		// 100 vocabulary rows per chunk either way: 3 chunks of the lm_head in the decode step.
		const half = await load(source, { maxChunkBytes: 100 * CONFIG.hiddenSize * 2 });
		const wide = await load(source, {
			weightDtype: 'f32',
			maxChunkBytes: 100 * CONFIG.hiddenSize * 4
		});
		const gens = [new Generator(half), new Generator(wide)];
		try {
			expect(half.weights.lmHead.dtype).toBe('f16');
			expect(half.weights.lmHead.chunks).toHaveLength(3);
			const options = { maxTokens: 6, temperature: 0, ignoreEos: true };
			const [a, b] = await Promise.all(gens.map((g) => g.generate(seqs.slice(0, 2), options)));
			for (let i = 0; i < 2; i++) {
				expect(a[i].ids).toEqual(b[i].ids);
				expect(a[i].logprobs).toBeAllclose(b[i].logprobs, SAME_LOGPROBS);
			}
		} finally {
			for (const g of gens) g.release();
			half.release();
			wide.release();
		}
	});

	it('LoRA gradients with f16 base weights equal the f32-widened model\u2019s', async () => {
		const { source } = fileSource(CONFIG, base, 'BF16');
		const lora = { rank: 4, alpha: 8 };
		const half = await load(source, { lora, seed: 3 });
		const wide = await load(source, { lora, seed: 3, weightDtype: 'f32' });
		try {
			const rng = new Rng(8);
			wide.lora!.write(await randomizeLoraB(half.lora!, rng, 0.2));
			const batch = toTokenBatch(seqs);
			const g = rng.normals(batch.B * (batch.T - 1));
			const a = await half.forwardBackward(seqs, g);
			const b = await wide.forwardBackward(seqs, g);
			expect(a.logprobs).toBeAllclose(b.logprobs, SAME_LOGPROBS);
			const ga = await half.lora!.readGrads();
			const gb = await wide.lora!.readGrads();
			expect(ga.size).toBe(gb.size);
			for (const [name, v] of gb) {
				const scale = v.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
				expect(scale, name).toBeGreaterThan(0);
				expect(ga.get(name)!, name).toBeAllclose(v, { atol: 1e-5 * scale, rtol: 0 });
			}
		} finally {
			half.release();
			wide.release();
		}
	});

	it('auto keeps a bf16 tensor that would overflow or flush in f32, and reports it', async () => {
		const tensors = new Map(base);
		// An embedding row no sequence uses holds 1e5 (> 65504): f16 would make it inf.
		const embed = tensors.get('model.embed_tokens.weight')!.slice();
		embed[(CONFIG.vocabSize - 1) * CONFIG.hiddenSize + 3] = 1e5;
		tensors.set('model.embed_tokens.weight', embed);
		// A projection of tiny values (|x| < 2^-17): f16 keeps them only as multiples of 2^-24.
		const tinyName = 'model.layers.0.self_attn.k_proj.weight';
		tensors.set(
			tinyName,
			tensors.get(tinyName)!.map((x) => x * 1e-5)
		);
		const { source, values } = fileSource(CONFIG, tensors, 'BF16');
		const auto = await load(source);
		const wide = await load(source, { weightDtype: 'f32' });
		try {
			const w = auto.weights;
			expect(w.embed.dtype).toBe('f32');
			expect(w.layers[0].proj.k_proj.dtype).toBe('f32');
			expect(w.layers[0].proj.q_proj.dtype).toBe('f16');
			expect(w.lmHead.dtype).toBe('f16');
			expect(w.keptF32.map((k) => k.name).sort()).toEqual(
				['model.embed_tokens.weight', tinyName].sort()
			);
			const byName = new Map(w.keptF32.map((k) => [k.name, k]));
			expect(byName.get('model.embed_tokens.weight')!.relativeError).toBe(Infinity);
			expect(byName.get(tinyName)!.relativeError).toBeGreaterThan(F16_MAX_RELATIVE_ERROR);
			expect(byName.get(tinyName)!.stored).toBe('bfloat16');
			// The bytes and the estimate follow the tensors kept in f32.
			const demoted = (CONFIG.vocabSize + 12) * CONFIG.hiddenSize; // embed [V, 36], k_proj [12, 36]
			expect(w.bytes).toBe(expectedBytes(CONFIG, 2) + 2 * demoted);
			expect(auto.estimateMemory(1, 8, 'score').lines[0].bytes).toBe(w.bytes);
			const a = await auto.scoreTokens(seqs);
			expect(a.logprobs).toBeAllclose((await wide.scoreTokens(seqs)).logprobs, SAME_LOGPROBS);
			expect(a.logprobs).toBeAllclose(
				referenceLogprobs(CONFIG, values, toTokenBatch(seqs)),
				LOGPROB_TOL
			);
			// 'f16' forces even these (the overflow becomes inf, as asked).
			const forced = await load(source, { weightDtype: 'f16' });
			expect(forced.weights.embed.dtype).toBe('f16');
			expect(forced.weights.layers[0].proj.k_proj.dtype).toBe('f16');
			expect(forced.weights.keptF32).toEqual([]);
			forced.release();
		} finally {
			auto.release();
			wide.release();
		}
	});

	it('f16 forces f16 from f32 weights (rounded), f32 forces f32 from an f16 file', async () => {
		const f32Source = MemoryWeightSource.forConfig(CONFIG, base);
		const auto = await load(f32Source);
		expect(Object.values(auto.weights.dtypes).every((d) => d === 'f32')).toBe(true);
		auto.release();
		const forced = await load(f32Source, { weightDtype: 'f16' });
		// The f32 model of the same values rounded to f16, as the reference.
		const rounded = new Map(
			[...base].map(([n, v]) => [n, mayBeF16(n) ? roundToF16(v) : v] as const)
		);
		const roundedModel = await load(MemoryWeightSource.forConfig(CONFIG, rounded));
		try {
			for (const [name, d] of Object.entries(forced.weights.dtypes))
				expect(d, name).toBe(mayBeF16(name) ? 'f16' : 'f32');
			expect(forced.weights.bytes).toBe(expectedBytes(CONFIG, 2));
			const a = await forced.scoreTokens(seqs);
			const b = await roundedModel.scoreTokens(seqs);
			expect(a.logprobs).toBeAllclose(b.logprobs, SAME_LOGPROBS);
		} finally {
			forced.release();
			roundedModel.release();
		}
		const { source } = fileSource(CONFIG, base, 'F16');
		const wide = await load(source, { weightDtype: 'f32' });
		expect(wide.weights.embed.dtype).toBe('f32');
		expect(wide.weights.layers[1].proj.o_proj.dtype).toBe('f32');
		expect(wide.weights.bytes).toBe(expectedBytes(CONFIG, 4));
		wide.release();
		await expect(load(source, { weightDtype: 'bf16' as never })).rejects.toThrow(RangeError);
	});
});
