/**
 * Constrained decoding in the Generator against the f64 reference: each step samples only
 * what the TokenConstraint allows; greedy picks the reference's argmax over them; logprobs
 * are over the FULL vocabulary (1e-4); unconstrained neighbours get exactly what they get
 * alone; an all-false mask ends the sequence 'stop'; stop tokens only where text may end.
 */
import { describe, expect, it } from 'vitest';
import { Generator } from '../../../../src/lib/model/generate/generator';
import type {
	GeneratedSequence,
	TokenConstraint
} from '../../../../src/lib/model/generate/options';
import { MemoryWeightSource, randomWeights } from '../../../../src/lib/testing/random-weights';
import { referenceLogits } from '../../../../src/lib/testing/reference';
import { TransformerModel } from '../../../../src/lib/model/transformer/transformer';
import type { ModelConfig } from '../../../../src/lib/model/types';
import { useGpu } from '../../../helpers/gpu';
import { TINY, randomSequences } from '../tiny-models';

const LOGPROB_TOL = { atol: 1e-4, rtol: 0 };
const TIE = 1e-3;

/** Allows `sets[k]` at its k-th token (cycling), and may end after `endAfter` tokens. */
class ScriptConstraint implements TokenConstraint {
	readonly seen: number[] = [];
	readonly allowedAt: number[][] = [];
	constructor(
		readonly sets: number[][],
		readonly endAfter = Infinity
	) {}
	fillMask(mask: Uint32Array, stop: readonly number[]): void {
		const set = this.sets[this.seen.length % this.sets.length];
		const allowed = [...set, ...(this.seen.length >= this.endAfter ? stop : [])];
		for (const id of allowed) mask[id >>> 5] |= 1 << (id & 31);
		this.allowedAt.push(allowed);
	}
	accept(id: number): void {
		this.seen.push(id);
	}
}

describe('constrained generation', () => {
	const gpu = useGpu();

	async function modelFor(config: ModelConfig, seed = 1) {
		const weights = randomWeights(config, seed);
		const source = MemoryWeightSource.forConfig(config, weights);
		return { model: await TransformerModel.create(gpu(), config, source), weights };
	}

	function check(
		config: ModelConfig,
		weights: Map<string, Float32Array>,
		prompt: number[],
		r: GeneratedSequence,
		c: ScriptConstraint,
		temperature: number
	) {
		expect(c.seen).toEqual(r.ids);
		const V = config.vocabSize;
		const expected: number[] = [];
		r.ids.forEach((id, s) => {
			expect(c.allowedAt[s], `step ${s}`).toContain(id);
			const z = referenceLogits(config, weights, [...prompt, ...r.ids.slice(0, s)]).subarray(
				(prompt.length + s - 1) * V
			);
			const t = temperature > 0 ? temperature : 1;
			let max = -Infinity;
			for (const x of z) max = Math.max(max, x);
			let sum = 0;
			for (const x of z) sum += Math.exp((x - max) / t);
			expected.push((z[id] - max) / t - Math.log(sum));
			if (temperature <= 0) {
				const allowed = [...c.allowedAt[s]].sort((a, b) => z[b] - z[a]);
				if (allowed.length < 2 || z[allowed[0]] - z[allowed[1]] > TIE) expect(id).toBe(allowed[0]);
			}
		});
		expect(r.logprobs).toBeAllclose(expected, LOGPROB_TOL);
	}

	it('samples only allowed tokens; logprobs are the full-vocabulary reference; greedy is the allowed argmax', async () => {
		const config = TINY.qwen2;
		const { model, weights } = await modelFor(config, 3);
		const gen = new Generator(model);
		const prompts = randomSequences(config.vocabSize, [4, 7], 2);
		const sets = [
			[5, 17, 200],
			[1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
			[42],
			Array.from({ length: 100 }, (_, i) => 2 * i + 1)
		];
		for (const temperature of [0, 1, 0.7]) {
			const cs = prompts.map((_, b) => new ScriptConstraint(b ? [...sets].reverse() : sets));
			const out = await gen.generate(prompts, {
				maxTokens: 6,
				temperature,
				topK: temperature === 0.7 ? 3 : 0,
				seed: 9,
				ignoreEos: true,
				constraints: cs
			});
			out.forEach((r, b) => {
				expect(r.ids).toHaveLength(6);
				check(config, weights, prompts[b], r, cs[b], temperature);
			});
		}
		gen.release();
		model.release();
	});

	it('unconstrained rows of a constrained call get what an unconstrained call gives them', async () => {
		const config = TINY.llama;
		const { model } = await modelFor(config, 5);
		const gen = new Generator(model);
		const prompts = randomSequences(config.vocabSize, [5, 3, 6], 4);
		const options = { maxTokens: 5, temperature: 1, seed: 21, ignoreEos: true };
		const plain = await gen.generate(prompts, options);
		const c = new ScriptConstraint([[7, 8, 9]]);
		const mixed = await gen.generate(prompts, {
			...options,
			constraints: [undefined, c, undefined]
		});
		for (const b of [0, 2]) {
			expect(mixed[b].ids).toEqual(plain[b].ids);
			expect(mixed[b].logprobs).toEqual(plain[b].logprobs);
		}
		expect(mixed[1].ids.every((id) => [7, 8, 9].includes(id))).toBe(true);
		// And the unconstrained path afterwards is as before (the kept session, no mask).
		expect(await gen.generate(prompts, options)).toEqual(plain);
		gen.release();
		model.release();
	});

	it('stop tokens only where the constraint may end; an empty mask ends the sequence', async () => {
		const config = { ...TINY.llama, eosTokenIds: [0] };
		const { model } = await modelFor(config, 7);
		const gen = new Generator(model);
		const prompts = randomSequences(config.vocabSize, [3, 3, 3], 6);
		// 0: 11 or 12, and from the third token on also the stop token; 1: three tokens, then
		// nothing allowed; 2: one token, then only the stop token.
		const cs = [
			new ScriptConstraint([[11, 12]], 2),
			new ScriptConstraint([[20], [21], [22], []]),
			new ScriptConstraint([[30], []], 1)
		];
		const out = await gen.generate(prompts, {
			maxTokens: 8,
			temperature: 1,
			seed: 1,
			constraints: cs
		});
		expect(out[0].ids.slice(0, 2).every((id) => id === 11 || id === 12)).toBe(true);
		expect(out[0].ids.slice(2).every((id) => [0, 11, 12].includes(id))).toBe(true);
		if (out[0].finishReason === 'stop') expect(out[0].ids.at(-1)).toBe(0);
		expect(out[1]).toMatchObject({ ids: [20, 21, 22], finishReason: 'stop' });
		expect(out[2]).toMatchObject({ ids: [30, 0], finishReason: 'stop' });
		// A constraint that allows nothing at all: no tokens.
		const [none] = await gen.generate([prompts[0]], {
			maxTokens: 4,
			constraints: [new ScriptConstraint([[]])]
		});
		expect(none).toMatchObject({ ids: [], finishReason: 'stop' });
		gen.release();
		model.release();
	});
});
