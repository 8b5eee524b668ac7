import { describe, expect, it } from 'vitest';
import { LoraConfigError } from '../../../../src/lib/model/errors';
import {
	DEFAULT_LORA_CONFIG,
	LoraParameters,
	loraBytes,
	peftName,
	resolveLoraConfig
} from '../../../../src/lib/model/transformer/lora';
import { useGpu } from '../../../helpers/gpu';
import { TINY } from '../tiny-models';

describe('LoRA parameters', () => {
	const gpu = useGpu();

	it('defaults to ART\u2019s r = 8, alpha = 16 on all seven projections; validates', () => {
		expect(resolveLoraConfig()).toEqual({
			rank: 8,
			alpha: 16,
			dropout: 0,
			targetModules: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj']
		});
		expect(resolveLoraConfig({ targetModules: ['v_proj', 'q_proj'] }).targetModules).toEqual([
			'q_proj',
			'v_proj'
		]);
		for (const bad of [
			{ rank: 2.5 },
			{ rank: 0 },
			{ alpha: 0 },
			{ alpha: NaN },
			{ dropout: 0.1 },
			{ targetModules: [] },
			{ targetModules: ['q_proj', 'lm_head'] as never[] }
		])
			expect(() => resolveLoraConfig(bad), JSON.stringify(bad)).toThrow(LoraConfigError);
		expect(DEFAULT_LORA_CONFIG.targetModules).toHaveLength(7);
	});

	it('initialises A like PEFT (U(-1/sqrt(in), 1/sqrt(in))) from the seed, B = 0, state = 0', async () => {
		const config = TINY.qwen3; // q_proj in 48, down_proj in 72
		const lora = LoraParameters.create(gpu(), config, { rank: 8 }, 42);
		expect(lora.scale).toBe(2);
		expect(lora.modules).toHaveLength(2 * 7);
		const values = await lora.read();
		expect(values.size).toBe(2 * 7 * 2);
		const a = values.get(peftName(0, 'q_proj', 'A'))!;
		expect(a.length).toBe(8 * 48);
		const bound = 1 / Math.sqrt(48);
		expect(Math.max(...a.map(Math.abs))).toBeLessThanOrEqual(bound);
		// Uniform on [-b, b]: variance b^2 / 3 (384 draws: within 25%).
		const variance = a.reduce((s, x) => s + x * x, 0) / a.length;
		expect(variance / ((bound * bound) / 3)).toBeGreaterThan(0.75);
		expect(variance / ((bound * bound) / 3)).toBeLessThan(1.25);
		const down = values.get(peftName(1, 'down_proj', 'A'))!;
		expect(Math.max(...down.map(Math.abs))).toBeLessThanOrEqual(1 / Math.sqrt(72));
		expect(Math.max(...down.map(Math.abs))).toBeGreaterThan(0.9 / Math.sqrt(72));
		for (const [name, v] of values)
			if (name.includes('lora_B')) expect(v.every((x) => x === 0)).toBe(true);
		for (const [, g] of await lora.readGrads()) expect(g.every((x) => x === 0)).toBe(true);
		// Same seed, same A; another seed, another A.
		const again = LoraParameters.create(gpu(), config, { rank: 8 }, 42);
		const other = LoraParameters.create(gpu(), config, { rank: 8 }, 43);
		expect(Array.from((await again.read()).get(peftName(0, 'q_proj', 'A'))!)).toEqual(
			Array.from(a)
		);
		expect(Array.from((await other.read()).get(peftName(0, 'q_proj', 'A'))!)).not.toEqual(
			Array.from(a)
		);
		for (const l of [lora, again, other]) l.release();
	});

	it('names, shapes, slots and bytes follow the targeted projections', () => {
		const config = TINY.qwen2; // C 36, 3 heads x 12, 1 kv head, I 56
		const lora = LoraParameters.create(gpu(), config, {
			rank: 3,
			targetModules: ['k_proj', 'down_proj']
		});
		expect(peftName(1, 'k_proj', 'A')).toBe(
			'base_model.model.model.layers.1.self_attn.k_proj.lora_A.weight'
		);
		expect(peftName(0, 'down_proj', 'B')).toBe(
			'base_model.model.model.layers.0.mlp.down_proj.lora_B.weight'
		);
		const k = lora.get(0, 'k_proj')!;
		expect([k.a.shape, k.b.shape]).toEqual([
			[3, 36],
			[12, 3]
		]);
		const down = lora.get(1, 'down_proj')!;
		expect([down.a.shape, down.b.shape]).toEqual([
			[3, 56],
			[36, 3]
		]);
		expect(lora.get(0, 'q_proj')).toBeUndefined();
		const slots = lora.slots();
		expect(slots).toHaveLength(2 * 2 * 2);
		for (const s of slots) for (const t of [s.grad, s.m, s.v]) expect(t.size).toBe(s.param.size);
		const params = 3 * (36 + 12) + 3 * (56 + 36);
		expect(loraBytes(config, lora.config)).toBe(2 * params * 4 * 4);
		lora.release();
	});

	it('writes by PEFT name, checks names and sizes, and zeroes gradients', async () => {
		const config = TINY.llama;
		const lora = LoraParameters.create(gpu(), config, { rank: 2 });
		const name = peftName(1, 'o_proj', 'B');
		const values = new Float32Array(32 * 2).map((_, i) => i / 7);
		lora.write(new Map([[name, values]]));
		expect(Array.from((await lora.read()).get(name)!)).toEqual(Array.from(values));
		expect(() => lora.write(new Map([['lm_head.lora_A.weight', values]]))).toThrow(LoraConfigError);
		expect(() => lora.write(new Map([[name, values.subarray(1)]]))).toThrow(LoraConfigError);
		lora.zeroGrads();
		for (const [, g] of await lora.readGrads()) expect(g.every((x) => x === 0)).toBe(true);
		lora.release();
	});
});
