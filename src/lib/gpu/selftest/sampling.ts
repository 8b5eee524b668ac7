/**
 * @file Sampling checked against its sort-based CPU reference, which draws with the same
 * Philox noise and Gumbel-max, so the token must match exactly (the runner-up is accepted
 * where the best two keys are within GAP_MIN); top_p kept TOP_P_MARGIN from a set boundary.
 * Logprobs: 1e-5 absolute + 1e-5 relative (an f32 sum of up to 151936 exponentials).
 */
import type { Gpu } from '../device';
import { run } from '../kernel';
import { sampleTokens } from '../kernels/sampling';
import { Rng } from '../../util/random';
import { allowedSetRef, logSoftmaxAtRef, sampleRef, type SamplingRow } from '../reference/sampling';
import { createTensor, readTensor, uploadTensor } from '../tensor';
import type { KernelCase } from './types';

const maskWords = (vocab: number) => Math.ceil(vocab / 32);

/** The rows' bitsets, one after another. */
function flatMasks(masks: readonly Uint32Array[], vocab: number): Uint32Array {
	const flat = new Uint32Array(masks.length * maskWords(vocab));
	masks.forEach((m, i) => flat.set(m, i * maskWords(vocab)));
	return flat;
}

const LOGPROB_TOL = { atol: 1e-5, rtol: 1e-5 };
const GAP_MIN = 1e-4;
const TOP_P_MARGIN = 1e-4;

/**
 * Runs `sampleTokens` once on host logits [rows.length, vocab]; returns what it wrote.
 * `masks`: one allowed-token bitset per row (u32 [ceil(vocab / 32)], bit set = allowed).
 */
export async function sampleOnGpu(
	gpu: Gpu,
	logits: Float32Array,
	vocab: number,
	rows: readonly SamplingRow[],
	step: number,
	masks?: readonly Uint32Array[]
): Promise<{ tokens: Uint32Array; logprobs: Float32Array }> {
	const b = rows.length;
	const t = {
		logits: uploadTensor(gpu, logits, [b, vocab], 'f32'),
		temperature: uploadTensor(
			gpu,
			rows.map((r) => r.temperature),
			[b],
			'f32'
		),
		topK: uploadTensor(
			gpu,
			rows.map((r) => r.topK),
			[b],
			'u32'
		),
		topP: uploadTensor(
			gpu,
			rows.map((r) => r.topP),
			[b],
			'f32'
		),
		seeds: uploadTensor(
			gpu,
			rows.map((r) => r.seed),
			[b],
			'u32'
		),
		...(masks
			? { mask: uploadTensor(gpu, flatMasks(masks, vocab), [b, maskWords(vocab)], 'u32') }
			: {}),
		tokens: createTensor(gpu, [b], 'u32'),
		logprobs: createTensor(gpu, [b], 'f32')
	};
	try {
		await run(gpu, (rec) => sampleTokens(rec, { ...t, step }));
		return {
			tokens: (await readTensor(t.tokens)).slice(),
			logprobs: (await readTensor(t.logprobs)).slice()
		};
	} finally {
		for (const x of Object.values(t)) x.release();
	}
}

/**
 * Seeded logits: 'normal' N(0, scale^2); 'ties' integers in [-3, 3] (many equal values),
 * half the zeros written as -0 (which must tie with +0).
 */
export function makeLogits(rng: Rng, n: number, kind: 'normal' | 'ties', scale = 3): Float32Array {
	if (kind === 'normal') return rng.normals(n, scale);
	return Float32Array.from({ length: n }, () => {
		const x = rng.int(7) - 3;
		return x === 0 && rng.next() < 0.5 ? -0 : x;
	});
}

/** `count` rows of random parameters: T in {0, 0.5, 1, 3}, top-k off or in [1, V], top-p
 * off or in (0, 1), distinct seeds. */
export function randomRows(seed: number, count: number, vocab: number): SamplingRow[] {
	const rng = new Rng(seed);
	return Array.from({ length: count }, () => ({
		temperature: [0, 0.5, 1, 3][rng.int(4)],
		topK: rng.next() < 0.3 ? 0 : 1 + rng.int(vocab),
		topP: rng.next() < 0.3 ? 1 : rng.next(),
		seed: Math.floor(rng.next() * 2 ** 32)
	}));
}

/** Moves top_p down until no set boundary lies within TOP_P_MARGIN of it. */
export function awayFromBoundary(logits: ArrayLike<number>, row: SamplingRow): SamplingRow {
	let r = row;
	while (r.topP < 1 && allowedSetRef(logits, r).topPMargin < TOP_P_MARGIN) {
		r = { ...r, topP: r.topP - 3 * TOP_P_MARGIN };
	}
	return r;
}

export interface SamplingCaseSpec {
	vocab: number;
	rows: SamplingRow[];
	kind: 'normal' | 'ties';
	step: number;
}

export function samplingCases(specs: SamplingCaseSpec[]): KernelCase[] {
	return specs.map((spec) => ({
		family: 'sampling',
		name:
			`B=${spec.rows.length} V=${spec.vocab} ${spec.kind} step=${spec.step} ` +
			(spec.rows.length > 4
				? 'random parameters per row'
				: spec.rows.map((r) => `(T=${r.temperature} k=${r.topK} p=${r.topP})`).join('')),
		async run(gpu: Gpu) {
			const { vocab, step } = spec;
			const rng = new Rng(vocab * 131 + spec.rows.length * 7 + step);
			const logits = makeLogits(rng, spec.rows.length * vocab, spec.kind);
			const rowLogits = (b: number) => logits.subarray(b * vocab, (b + 1) * vocab);
			const rows = spec.rows.map((r, b) => awayFromBoundary(rowLogits(b), r));
			const got = await sampleOnGpu(gpu, logits, vocab, rows, step);
			const expectedTokens = rows.map((r, b) => {
				const ref = sampleRef(rowLogits(b), r, step);
				return ref.gap < GAP_MIN && got.tokens[b] === ref.second ? ref.second : ref.token;
			});
			const expectedLogprobs = rows.map((r, b) =>
				logSoftmaxAtRef(rowLogits(b), r.temperature, got.tokens[b])
			);
			return [
				{ label: 'tokens', actual: got.tokens, expected: expectedTokens, atol: 0, rtol: 0 },
				{ label: 'logprobs', actual: got.logprobs, expected: expectedLogprobs, ...LOGPROB_TOL }
			];
		}
	}));
}

const row = (temperature: number, topK: number, topP: number, seed: number): SamplingRow => ({
	temperature,
	topK,
	topP,
	seed
});

/** The in-browser default: greedy with ties, and a mixed batch of sampled rows. */
export const SAMPLING_SELFTEST = samplingCases([
	{ vocab: 37, kind: 'ties', step: 0, rows: [row(0, 0, 1, 1), row(0, 5, 0.5, 2)] },
	{
		vocab: 1000,
		kind: 'normal',
		step: 3,
		rows: [row(1, 0, 1, 11), row(0.7, 50, 1, 12), row(1.3, 0, 0.9, 13), row(1, 20, 0.8, 14)]
	}
]);
