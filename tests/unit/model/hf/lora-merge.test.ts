/**
 * Folding a LoRA adapter into the base weights (lora-merge.ts): the merged model without an
 * adapter scores what the base with the adapter scores (CPU reference forward, f64 sums over
 * f32 weights; tolerance 1e-5 on logprobs), untargeted tensors are untouched, and a weight
 * the adapter cannot fit is a typed error. No GPU.
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../../../../src/lib/util/random';
import { LoraConfigError } from '../../../../src/lib/model/errors';
import { peftName } from '../../../../src/lib/model/transformer/lora';
import { mergeLora, type NamedTensor } from '../../../../src/lib/model/hf/lora-merge';
import { makeFixture } from '../../../../src/lib/testing/fixtures';
import type { PeftAdapter } from '../../../../src/lib/model/hf/peft-adapter';
import { referenceLogprobs } from '../../../../src/lib/testing/reference';
import { projectionShape, type ProjectionName } from '../../../../src/lib/model/hf/weight-spec';

const fixture = makeFixture('llama');
const { config } = fixture;
const targets: ProjectionName[] = ['q_proj', 'v_proj', 'down_proj'];

function randomAdapter(rank: number, alpha: number): PeftAdapter {
	const rng = new Rng(5);
	const params = new Map<string, Float32Array>();
	for (let layer = 0; layer < config.numLayers; layer++)
		for (const m of targets) {
			const [out, inF] = projectionShape(config, m);
			params.set(peftName(layer, m, 'A'), Float32Array.from(rng.normals(rank * inF, 0.1)));
			params.set(peftName(layer, m, 'B'), Float32Array.from(rng.normals(out * rank, 0.1)));
		}
	return { config: { rank, alpha, dropout: 0, targetModules: targets }, params };
}

/** The fixture's tensors, projection weights shaped [out, in] as a weight file stores them. */
const tensors = (): NamedTensor[] =>
	[...fixture.tensors].map(([name, data]) => {
		const m = /\.(\w+_proj)\.weight$/.exec(name)?.[1] as ProjectionName | undefined;
		return { name, shape: m ? projectionShape(config, m) : [data.length], data };
	});

const batch = {
	B: 2,
	T: 6,
	ids: Uint32Array.from([1, 5, 9, 2, 7, 3, 4, 4, 8, 1, 0, 0]),
	lengths: Uint32Array.from([6, 4])
};

describe('mergeLora', () => {
	it('scores as the base with the adapter, and differs from the base alone', () => {
		const adapter = randomAdapter(4, 8);
		const merged = new Map(mergeLora(config, tensors(), adapter).map((t) => [t.name, t.data]));
		const withAdapter = referenceLogprobs(config, fixture.tensors, batch, {
			scale: 2,
			params: adapter.params
		});
		const mergedAlone = referenceLogprobs(config, merged, batch);
		const baseAlone = referenceLogprobs(config, fixture.tensors, batch);
		let maxDiff = 0;
		let effect = 0;
		for (let i = 0; i < withAdapter.length; i++) {
			if (Number.isNaN(withAdapter[i])) continue;
			maxDiff = Math.max(maxDiff, Math.abs(withAdapter[i] - mergedAlone[i]));
			effect = Math.max(effect, Math.abs(withAdapter[i] - baseAlone[i]));
		}
		expect(maxDiff).toBeLessThan(1e-5);
		expect(effect).toBeGreaterThan(1e-2);
	});

	it('adds (alpha / r) B A to targeted weights only, leaving its inputs unchanged', () => {
		const adapter = randomAdapter(2, 6);
		const input = tensors();
		const before = new Map(input.map((t) => [t.name, t.data.slice()]));
		const out = mergeLora(config, input, adapter);
		const name = 'model.layers.1.mlp.down_proj.weight';
		const [, inF] = projectionShape(config, 'down_proj');
		const a = adapter.params.get(peftName(1, 'down_proj', 'A'))!;
		const b = adapter.params.get(peftName(1, 'down_proj', 'B'))!;
		// entry (o = 3, i = 5) by hand: W + 3 (B[3, 0] A[0, 5] + B[3, 1] A[1, 5])
		const hand = before.get(name)![3 * inF + 5] + 3 * (b[6] * a[5] + b[7] * a[inF + 5]);
		const merged = out.find((t) => t.name === name)!;
		expect(merged.data[3 * inF + 5]).toBeCloseTo(hand, 6);
		for (const t of out)
			if (!/(q_proj|v_proj|down_proj)\.weight$/.test(t.name))
				expect(t.data).toEqual(before.get(t.name));
		for (const t of input) expect(t.data).toEqual(before.get(t.name));
	});

	it('refuses an adapter whose modules the model does not have', () => {
		const adapter = randomAdapter(2, 4);
		const withoutQ = tensors().filter((t) => t.name !== 'model.layers.0.self_attn.q_proj.weight');
		expect(() => mergeLora(config, withoutQ, adapter)).toThrow(LoraConfigError);
	});

	it('refuses a weight stored [in, out] (same element count, other layout)', () => {
		const adapter = randomAdapter(2, 4);
		const down = 'model.layers.1.mlp.down_proj.weight';
		const transposed = tensors().map((t) =>
			t.name === down ? { ...t, shape: [t.shape[1], t.shape[0]] } : t
		);
		expect(() => mergeLora(config, transposed, adapter)).toThrow(/down_proj.*shape/);
	});
});
