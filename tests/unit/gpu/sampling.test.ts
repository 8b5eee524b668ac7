import { describe, expect, it } from 'vitest';
import { ShapeMismatchError } from '../../../src/lib/gpu/errors';
import { run } from '../../../src/lib/gpu/kernel';
import { sampleTokens } from '../../../src/lib/gpu/kernels/sampling';
import { philox4x32 } from '../../../src/lib/gpu/reference/philox';
import { Rng } from '../../../src/lib/util/random';
import { allowedSetRef, type SamplingRow } from '../../../src/lib/gpu/reference/sampling';
import {
	awayFromBoundary,
	makeLogits,
	randomRows,
	sampleOnGpu,
	samplingCases
} from '../../../src/lib/gpu/selftest/sampling';
import { createTensor, type Tensor } from '../../../src/lib/gpu/tensor';
import { itRunsCases, useGpu } from '../../helpers/gpu';

const row = (temperature: number, topK: number, topP: number, seed: number): SamplingRow => ({
	temperature,
	topK,
	topP,
	seed
});

/** `logits` [V] repeated for every row of `rows`. */
function tile(logits: Float32Array, n: number): Float32Array {
	const out = new Float32Array(n * logits.length);
	for (let b = 0; b < n; b++) out.set(logits, b * logits.length);
	return out;
}

/** Draws of one distribution: `seeds` rows of the same logits at each of `steps` steps. */
async function draws(
	gpu: Parameters<typeof sampleOnGpu>[0],
	logits: Float32Array,
	params: Omit<SamplingRow, 'seed'>,
	seeds: number,
	steps: number
): Promise<number[]> {
	const rows = Array.from({ length: seeds }, (_, s) => ({ ...params, seed: 1000 + s }));
	const out: number[] = [];
	for (let step = 0; step < steps; step++) {
		out.push(...(await sampleOnGpu(gpu, tile(logits, seeds), logits.length, rows, step)).tokens);
	}
	return out;
}

/** Upper 0.1% point of chi-square with `df` degrees of freedom (Wilson-Hilferty). */
function chiSquareCritical(df: number): number {
	const z = 3.09; // standard normal 0.999 quantile
	const a = 2 / (9 * df);
	return df * (1 - a + z * Math.sqrt(a)) ** 3;
}

describe('sampling', () => {
	const gpu = useGpu();

	itRunsCases(
		samplingCases([
			// Greedy: argmax with the lowest index among tied maxima, sizes around the workgroup.
			{ vocab: 1, kind: 'normal', step: 0, rows: [row(0, 0, 1, 1), row(1, 1, 0.5, 2)] },
			{ vocab: 7, kind: 'ties', step: 0, rows: [row(0, 0, 1, 1), row(0, 0, 1, 2)] },
			{ vocab: 257, kind: 'ties', step: 0, rows: [row(0, 3, 0.5, 1), row(-1, 0, 1, 2)] },
			{ vocab: 32000, kind: 'normal', step: 0, rows: [row(0, 0, 1, 1), row(0, 0, 1, 2)] },
			// Sampled, mixed parameters per row; the exact token of the reference's draw.
			{
				vocab: 255,
				kind: 'ties',
				step: 5,
				rows: [row(1, 0, 1, 3), row(0.5, 10, 1, 4), row(2, 0, 0.7, 5), row(1, 40, 0.6, 6)]
			},
			{
				vocab: 32000,
				kind: 'normal',
				step: 17,
				rows: [row(1, 0, 1, 7), row(0.6, 40, 0.95, 8), row(1.5, 0, 0.5, 9), row(0, 10, 0.9, 10)]
			},
			// Many rows, each the exact token of the reference: sensitive to small biases in the
			// noise or the sets that frequency tests cannot see. Ties with -0 and +0 mixed.
			{ vocab: 64, kind: 'normal', step: 1, rows: randomRows(1, 1024, 64) },
			{ vocab: 64, kind: 'ties', step: 2, rows: randomRows(2, 1024, 64) },
			// Qwen2.5's vocabulary, one row, the usual chat settings.
			{ vocab: 151936, kind: 'normal', step: 2, rows: [row(0.7, 20, 0.8, 42)] }
		]),
		gpu
	);

	it('host Philox-4x32-10 matches the known-answer vectors of Random123', () => {
		// Random123's kat_vectors: counter, key -> output. The GPU's Philox is checked through
		// the exact-token cases above, which use this one.
		expect(philox4x32([0, 0, 0, 0], [0, 0])).toEqual([
			0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8
		]);
		const ones = 0xffffffff;
		expect(philox4x32([ones, ones, ones, ones], [ones, ones])).toEqual([
			0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd
		]);
		expect(
			philox4x32([0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344], [0xa4093822, 0x299f31d0])
		).toEqual([0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1]);
	});

	it('reproduces a row whatever its place and neighbours in the batch', async () => {
		const v = 3000;
		const rng = new Rng(5);
		const l = Array.from({ length: 4 }, () => makeLogits(rng, v, 'normal', 1));
		const r = [row(1, 0, 1, 1), row(0.8, 50, 1, 2), row(1.2, 0, 0.9, 3), row(1, 100, 0.95, 4)];
		const cat = (ls: Float32Array[]) => Float32Array.from(ls.flatMap((x) => [...x]));
		const a = await sampleOnGpu(gpu(), cat(l), v, r, 9);
		const b = await sampleOnGpu(
			gpu(),
			cat([l[2], l[3], l[0]]),
			v,
			[r[2], row(1, 0, 1, 99), r[0]],
			9
		);
		expect([b.tokens[2], b.tokens[0]]).toEqual([a.tokens[0], a.tokens[2]]);
		const again = await sampleOnGpu(gpu(), cat(l), v, r, 9);
		expect(again.tokens).toEqual(a.tokens);
		expect(again.logprobs).toEqual(a.logprobs);
	});

	it('draws differ across seeds and across steps', async () => {
		const logits = makeLogits(new Rng(6), 3000, 'normal', 1);
		const params = { temperature: 1, topK: 0, topP: 1 };
		const bySeed = await draws(gpu(), logits, params, 64, 2);
		expect(new Set(bySeed.slice(0, 64)).size).toBeGreaterThan(50);
		const sameAtBothSteps = bySeed.slice(0, 64).filter((t, s) => t === bySeed[64 + s]).length;
		expect(sameAtBothSteps).toBeLessThan(8);
	});

	it('draws only, and every one of, the tokens top-k and top-p allow', async () => {
		const v = 2000;
		const rng = new Rng(7);
		const logits = makeLogits(rng, v, 'normal', 1);
		for (let j = 0; j < 8; j++) logits[rng.int(v)] = 8.5 - 0.4 * j; // a peak of 8 tokens
		for (const params of [
			{ temperature: 1, topK: 5, topP: 1 },
			{ temperature: 0.9, topK: 0, topP: 0.8 },
			{ temperature: 1.2, topK: 6, topP: 0.9 }
		]) {
			const p = awayFromBoundary(logits, { ...params, seed: 0 });
			const { allowed } = allowedSetRef(logits, p);
			const allowedTokens = [...allowed.keys()].filter((i) => allowed[i]);
			expect(allowedTokens.length).toBeGreaterThan(1);
			const got = await draws(gpu(), logits, p, 256, 2);
			expect(
				got.filter((t) => !allowed[t]),
				`draws outside the set (${JSON.stringify(p)})`
			).toEqual([]);
			expect([...new Set(got)].sort((a, b) => a - b)).toEqual(allowedTokens);
		}
	});

	it('sampled frequencies match the renormalised probabilities (chi-square, 0.1% level)', async () => {
		const logits = makeLogits(new Rng(8), 12, 'normal', 1.5);
		for (const params of [
			{ temperature: 1, topK: 0, topP: 1 },
			{ temperature: 0.8, topK: 0, topP: 0.9 },
			{ temperature: 1.3, topK: 4, topP: 1 }
		]) {
			const p = awayFromBoundary(logits, { ...params, seed: 0 });
			const { probs } = allowedSetRef(logits, p);
			const got = await draws(gpu(), logits, p, 1024, 4);
			const n = got.length;
			const counts = new Array<number>(12).fill(0);
			for (const t of got) counts[t]++;
			// Cells expected below 5 draws are pooled, as the chi-square approximation needs.
			let chi = 0;
			let cells = 0;
			let poolObs = 0;
			let poolExp = 0;
			for (let i = 0; i < 12; i++) {
				if (probs[i] === 0) {
					expect(counts[i], `token ${i} is outside the set`).toBe(0);
				} else if (n * probs[i] < 5) {
					poolObs += counts[i];
					poolExp += n * probs[i];
				} else {
					chi += (counts[i] - n * probs[i]) ** 2 / (n * probs[i]);
					cells++;
				}
			}
			if (poolExp > 0) {
				chi += (poolObs - poolExp) ** 2 / poolExp;
				cells++;
			}
			expect(cells).toBeGreaterThan(2);
			expect(chi, `chi-square for ${JSON.stringify(p)}`).toBeLessThan(chiSquareCritical(cells - 1));
		}
	});

	describe('bad input', () => {
		function args(b: number, v: number, over: Partial<Record<string, Tensor>> = {}) {
			const g = gpu();
			return {
				logits: createTensor(g, [b, v], 'f32'),
				temperature: createTensor(g, [b], 'f32'),
				topK: createTensor(g, [b], 'u32'),
				topP: createTensor(g, [b], 'f32'),
				seeds: createTensor(g, [b], 'u32'),
				tokens: createTensor(g, [b], 'u32'),
				logprobs: createTensor(g, [b], 'f32'),
				...over,
				step: 0
			};
		}
		const free = (a: ReturnType<typeof args>) => {
			for (const t of Object.values(a)) if (typeof t !== 'number') t.release();
		};
		for (const [what, make] of [
			['1-D logits', () => args(3, 10, { logits: createTensor(gpu(), [30], 'f32') })],
			['f32 top_k', () => args(3, 10, { topK: createTensor(gpu(), [3], 'f32') })],
			[
				'seeds of another batch size',
				() => args(3, 10, { seeds: createTensor(gpu(), [4], 'u32') })
			],
			['i32 tokens', () => args(3, 10, { tokens: createTensor(gpu(), [3], 'i32') })],
			['an empty vocabulary', () => args(3, 0)]
		] as const) {
			it(`rejects ${what}`, async () => {
				const a = make();
				await expect(run(gpu(), (rec) => sampleTokens(rec, a))).rejects.toThrow(ShapeMismatchError);
				free(a);
			});
		}
		it('rejects a step that is not a u32', async () => {
			const a = args(2, 5);
			await expect(run(gpu(), (rec) => sampleTokens(rec, { ...a, step: -1 }))).rejects.toThrow(
				RangeError
			);
			free(a);
		});
	});
});
