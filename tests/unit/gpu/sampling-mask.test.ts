/**
 * The masked sampler against a CPU reference built from the unmasked one: the allowed
 * tokens through the same temperature / top-k / top-p sets and Gumbel-max draw, the logprob
 * over the FULL vocabulary. Tokens exact (the runner-up accepted within 1e-4 Gumbel keys);
 * logprobs 1e-5 absolute + relative. With every token allowed it must give the unmasked
 * kernel's bits.
 */
import { describe, expect, it } from 'vitest';
import { run } from '../../../src/lib/gpu/kernel';
import { sampleTokens } from '../../../src/lib/gpu/kernels/sampling';
import {
	allowedSetRef,
	gumbelNoise,
	logSoftmaxAtRef,
	type SamplingRow
} from '../../../src/lib/gpu/reference/sampling';
import { makeLogits, sampleOnGpu } from '../../../src/lib/gpu/selftest/sampling';
import { createTensor } from '../../../src/lib/gpu/tensor';
import { Rng } from '../../../src/lib/util/random';
import { useGpu } from '../../helpers/gpu';

const LOGPROB_TOL = { atol: 1e-5, rtol: 1e-5 };
const GAP_MIN = 1e-4;

const row = (temperature: number, topK: number, topP: number, seed: number): SamplingRow => ({
	temperature,
	topK,
	topP,
	seed
});

/** A mask [V] as booleans -> its u32 words. */
function words(allowed: readonly boolean[]): Uint32Array {
	const w = new Uint32Array(Math.ceil(allowed.length / 32));
	allowed.forEach((a, i) => {
		if (a) w[i >>> 5] |= 1 << (i & 31);
	});
	return w;
}

/** The token the masked GPU sampler must draw, and the runner-up when it is within GAP_MIN. */
function maskedRef(
	logits: Float32Array,
	allowed: readonly boolean[],
	r: SamplingRow,
	step: number
): { token: number; alternatives: number[] } {
	const ids = allowed.flatMap((a, i) => (a ? [i] : []));
	const sub = Float32Array.from(ids, (i) => logits[i]);
	if (r.temperature <= 0) {
		let best = 0;
		for (let j = 1; j < sub.length; j++) if (sub[j] > sub[best]) best = j;
		return { token: ids[best], alternatives: [] };
	}
	const kept = allowedSetRef(sub, r).allowed;
	const max = Math.max(...sub);
	const keys = ids
		.map((i, j) => ({
			i,
			key: kept[j] ? (logits[i] - max) / r.temperature + gumbelNoise(r.seed, step, i) : -Infinity
		}))
		.sort((a, b) => b.key - a.key);
	const near = keys.length > 1 && keys[0].key - keys[1].key < GAP_MIN ? [keys[1].i] : [];
	return { token: keys[0].i, alternatives: near };
}

type MaskKind = 'half' | 'sparse' | 'one' | 'no-max' | 'far-below';

/** A mask of `kind` for `logits`: random half, 3 tokens, 1 token, all but the top 5
 * logits, or 4 tokens set 100 below the max (exp underflows f32 against the full max). */
function makeMask(rng: Rng, logits: Float32Array, kind: MaskKind): boolean[] {
	const v = logits.length;
	const allowed = new Array<boolean>(v).fill(false);
	const pick = (n: number) => {
		for (let k = 0; k < n; k++) allowed[rng.int(v)] = true;
	};
	if (kind === 'half') for (let i = 0; i < v; i++) allowed[i] = rng.next() < 0.5;
	else if (kind === 'sparse') pick(3);
	else if (kind === 'one') pick(1);
	else if (kind === 'no-max') {
		allowed.fill(true);
		const order = Array.from({ length: v }, (_, i) => i).sort((a, b) => logits[b] - logits[a]);
		for (const i of order.slice(0, Math.min(5, v - 1))) allowed[i] = false;
	} else {
		const max = Math.max(...logits);
		for (let k = 0; k < 4; k++) {
			const i = rng.int(v);
			logits[i] = max - 100 - k * 0.5;
			allowed[i] = true;
		}
	}
	if (!allowed.some(Boolean)) allowed[0] = true;
	return allowed;
}

describe('masked sampling (constrained decoding)', () => {
	const gpu = useGpu();

	const cases: { vocab: number; step: number; rows: SamplingRow[]; kinds: MaskKind[] }[] = [
		{
			vocab: 37,
			step: 0,
			rows: [
				row(0, 0, 1, 1),
				row(1, 0, 1, 2),
				row(0.7, 5, 0.9, 3),
				row(0.5, 0, 1, 4),
				row(1, 2, 1, 5)
			],
			kinds: ['half', 'sparse', 'one', 'no-max', 'far-below']
		},
		{
			vocab: 1000,
			step: 7,
			rows: [
				row(0, 0, 1, 6),
				row(1, 0, 1, 7),
				row(0.8, 40, 0.95, 8),
				row(0.5, 0, 0.7, 9),
				row(1.3, 0, 1, 10)
			],
			kinds: ['half', 'sparse', 'no-max', 'far-below', 'half']
		},
		{
			vocab: 151936,
			step: 3,
			rows: [row(0.7, 20, 0.8, 42), row(0, 0, 1, 43)],
			kinds: ['half', 'no-max']
		}
	];
	for (const c of cases)
		it(`V=${c.vocab}: tokens and logprobs as the CPU reference (${c.kinds.join(', ')})`, async () => {
			const rng = new Rng(c.vocab + c.step);
			const logits = makeLogits(rng, c.rows.length * c.vocab, 'normal');
			const rowLogits = (b: number) => logits.subarray(b * c.vocab, (b + 1) * c.vocab);
			const allowed = c.rows.map((_, b) => makeMask(rng, rowLogits(b), c.kinds[b]));
			const got = await sampleOnGpu(gpu(), logits, c.vocab, c.rows, c.step, allowed.map(words));
			c.rows.forEach((r, b) => {
				const ref = maskedRef(rowLogits(b), allowed[b], r, c.step);
				const token = got.tokens[b];
				expect(allowed[b][token], `row ${b}: token ${token} allowed`).toBe(true);
				expect([ref.token, ...ref.alternatives], `row ${b} (${c.kinds[b]})`).toContain(token);
				expect([got.logprobs[b]]).toBeAllclose(
					[logSoftmaxAtRef(rowLogits(b), r.temperature, token)],
					LOGPROB_TOL
				);
			});
		});

	it('with every token allowed, the bits of the unmasked sampler', async () => {
		const v = 3000;
		const rows = [row(0, 0, 1, 1), row(1, 0, 1, 2), row(0.6, 30, 0.9, 3), row(1.5, 0, 0.5, 4)];
		const logits = makeLogits(new Rng(11), rows.length * v, 'ties');
		const all = new Uint32Array(Math.ceil(v / 32)).fill(0xffffffff);
		for (const step of [0, 5]) {
			const plain = await sampleOnGpu(gpu(), logits, v, rows, step);
			const masked = await sampleOnGpu(
				gpu(),
				logits,
				v,
				rows,
				step,
				rows.map(() => all)
			);
			expect(masked.tokens).toEqual(plain.tokens);
			expect(masked.logprobs).toEqual(plain.logprobs);
		}
	});

	it('draws follow the renormalised distribution over the allowed tokens', async () => {
		// 6 allowed tokens of 200; 64 rows x 8 steps = 512 draws; chi-square at 0.1%.
		const v = 200;
		const rng = new Rng(12);
		const base = makeLogits(rng, v, 'normal', 1);
		const allowed = new Array<boolean>(v).fill(false);
		const ids = [3, 40, 41, 99, 150, 199];
		for (const i of ids) allowed[i] = true;
		const mask = words(allowed);
		const rows = Array.from({ length: 64 }, (_, s) => row(1, 0, 1, 500 + s));
		const logits = new Float32Array(rows.length * v);
		for (let b = 0; b < rows.length; b++) logits.set(base, b * v);
		const counts = new Map<number, number>();
		for (let step = 0; step < 8; step++) {
			const got = await sampleOnGpu(
				gpu(),
				logits,
				v,
				rows,
				step,
				rows.map(() => mask)
			);
			for (const t of got.tokens) counts.set(t, (counts.get(t) ?? 0) + 1);
		}
		expect([...counts.keys()].every((t) => allowed[t])).toBe(true);
		const z = ids.reduce((s, i) => s + Math.exp(base[i]), 0);
		let chi = 0;
		for (const i of ids) {
			const expected = (512 * Math.exp(base[i])) / z;
			chi += ((counts.get(i) ?? 0) - expected) ** 2 / expected;
		}
		expect(chi).toBeLessThan(20.5); // chi-square 0.999 quantile, 5 degrees of freedom
	});

	it('refuses a mask of the wrong shape', async () => {
		const g = gpu();
		const t = {
			logits: createTensor(g, [2, 40], 'f32'),
			temperature: createTensor(g, [2], 'f32'),
			topK: createTensor(g, [2], 'u32'),
			topP: createTensor(g, [2], 'f32'),
			seeds: createTensor(g, [2], 'u32'),
			tokens: createTensor(g, [2], 'u32'),
			logprobs: createTensor(g, [2], 'f32'),
			mask: createTensor(g, [2, 1], 'u32')
		};
		try {
			await expect(run(g, (rec) => sampleTokens(rec, { ...t, step: 0 }))).rejects.toThrow(
				/mask must be u32 \[2, 2\]/
			);
		} finally {
			for (const x of Object.values(t)) x.release();
		}
	});
});
