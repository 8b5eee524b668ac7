/**
 * @file Chunked log-softmax of chosen tokens checked against the full f64 log-softmax.
 * The GPU logits are f32 dot products, so tolerances scale with the case's largest |logit|
 * (for dh, its largest entry), not the logprob. An f16 W is compared with the f16-rounded
 * reference, with the same tolerances.
 */
import { uploadChunkedMatrix, type ChunkedMatrix } from '../chunked';
import type { Gpu } from '../device';
import { run } from '../kernel';
import { logSoftmaxGatherBackward, logSoftmaxGatherForward } from '../kernels/logsoftmax';
import type { Tolerance } from '../reference/allclose';
import {
	logitsRef,
	logSoftmaxGatherBackwardRef,
	logSoftmaxGatherRef
} from '../reference/logsoftmax';
import { roundToF16 } from '../half';
import { Rng } from '../../util/random';
import { Tensor, createTensor, readTensor, uploadTensor } from '../tensor';
import type { KernelCase } from './types';

/** For logprob, lse and entropy: errors scale with the largest |logit| (measured up to
 * 2.2e-7 of it with C=64, ~1e-7 to 1e-8 at C <= 128 otherwise): 2e-6 of it, at least 2e-6. */
export function logSoftmaxTolerance(maxAbsLogit: number): Tolerance {
	return { atol: 2e-6 * Math.max(1, maxAbsLogit), rtol: 1e-5 };
}

/** For dh: errors scale with its largest entry (measured up to 3.4e-6 of it): 2e-5 of it. */
export function logSoftmaxGradTolerance(maxAbsGrad: number): Tolerance {
	return { atol: 2e-5 * Math.max(1e-3, maxAbsGrad), rtol: 1e-5 };
}

export function maxAbs(xs: ArrayLike<number>): number {
	let m = 0;
	for (let i = 0; i < xs.length; i++) m = Math.max(m, Math.abs(xs[i]));
	return m;
}

export interface LogSoftmaxSize {
	/** Tokens. */
	n: number;
	/** Hidden size. */
	c: number;
	/** Vocabulary. */
	v: number;
	/** Vocabulary rows per chunk (default: the budget's choice). */
	chunkRows?: number;
	/** Upload W as a ChunkedMatrix with chunks of at most this many bytes. */
	maxBytes?: number;
	temperature?: number;
	/** Passed through: the logits budget that picks chunkRows when it is not given. */
	logitsBudgetBytes?: number;
	/** Standard deviation of the logits (default 3; ~40 reaches logits of ±100). */
	logitStd?: number;
	/** W's dtype (default f32). */
	weight?: 'f32' | 'f16';
}

/** Host inputs for one case; targets hit 0, V-1 and both sides of every piece border. */
export function logSoftmaxInputs(size: LogSoftmaxSize) {
	const { n, c, v, logitStd = 3 } = size;
	const rng = new Rng(n * 1_000_003 + c * 7919 + v);
	const h = rng.normals(n * c);
	const weight = rng.normals(v * c, logitStd / Math.sqrt(c));
	const g = rng.normals(n);
	for (let i = 0; i < n; i += 5) g[i] = 0; // masked tokens
	const targetsFor = (borders: number[]) => {
		const special = [0, v - 1, ...borders.flatMap((b) => [b - 1, b])];
		const targets = new Uint32Array(n);
		for (let i = 0; i < n; i++) targets[i] = i < special.length ? special[i] : rng.int(v);
		return targets;
	};
	return { h, weight, g, targetsFor };
}

/** Row indices where a new vocabulary piece starts (ChunkedMatrix chunks, then chunkRows). */
export function pieceStarts(chunkStarts: number[], chunkEnds: number[], chunkRows?: number) {
	const starts: number[] = [];
	chunkStarts.forEach((s, i) => {
		for (let r = s; r < chunkEnds[i]; r += chunkRows ?? Infinity) starts.push(r);
	});
	return starts.filter((s) => s > 0);
}

/** The wrapper's default chunkRows under a budget (for placing targets at its borders). */
function budgetRows(budget: number | undefined, n: number): number | undefined {
	return budget ? Math.max(1, Math.floor(budget / (4 * n))) : undefined;
}

function describe(s: LogSoftmaxSize): string {
	const parts = [`N=${s.n} C=${s.c} V=${s.v}`];
	if (s.chunkRows) parts.push(`chunkRows=${s.chunkRows}`);
	if (s.maxBytes) parts.push(`chunked W ${s.maxBytes} B`);
	if (s.temperature) parts.push(`T=${s.temperature}`);
	if (s.logitsBudgetBytes) parts.push(`logits budget ${s.logitsBudgetBytes} B`);
	if (s.logitStd) parts.push(`logit std ${s.logitStd}`);
	if (s.weight === 'f16') parts.push('W f16');
	return parts.join(' ');
}

export function logSoftmaxCases(sizes: LogSoftmaxSize[]): KernelCase[] {
	return sizes.map((size) => ({
		family: 'logsoftmax',
		name: `forward+backward ${describe(size)}`,
		async run(gpu: Gpu) {
			const { n, c, v, chunkRows, maxBytes, temperature, logitsBudgetBytes } = size;
			const owned: { release(): void }[] = [];
			try {
				const inputs = logSoftmaxInputs(size);
				const { h: hh, g: gh, targetsFor } = inputs;
				const wType = size.weight ?? 'f32';
				// The values the kernels read: f16-rounded for an f16 W.
				const wh = wType === 'f16' ? roundToF16(inputs.weight) : inputs.weight;
				let weight: Tensor | ChunkedMatrix;
				let starts: number[];
				if (maxBytes) {
					const m = uploadChunkedMatrix(gpu, wh, v, c, wType, maxBytes);
					weight = m;
					starts = pieceStarts(
						m.chunks.map((k) => k.rowOffset),
						m.chunks.map((k) => k.rowOffset + k.rows),
						chunkRows ?? budgetRows(logitsBudgetBytes, n)
					);
				} else {
					weight = uploadTensor(gpu, wh, [v, c], wType);
					starts = pieceStarts([0], [v], chunkRows ?? budgetRows(logitsBudgetBytes, n));
				}
				owned.push(weight);
				const th = targetsFor(starts);
				const h = uploadTensor(gpu, hh, [n, c], 'f32');
				const targets = uploadTensor(gpu, th, [n], 'u32');
				const g = uploadTensor(gpu, gh, [n], 'f32');
				const logprobs = createTensor(gpu, [n], 'f32');
				const lse = createTensor(gpu, [n], 'f32');
				const entropy = createTensor(gpu, [n], 'f32');
				const dh = createTensor(gpu, [n, c], 'f32');
				owned.push(h, targets, g, logprobs, lse, entropy, dh);
				const common = { h, weight, targets, chunkRows, temperature, logitsBudgetBytes };
				await run(gpu, (rec) => {
					logSoftmaxGatherForward(rec, { ...common, logprobs, lse, entropy });
					logSoftmaxGatherBackward(rec, { ...common, g, lse, dh });
				});
				const z = logitsRef(hh, wh, n, c, v, temperature);
				const ref = logSoftmaxGatherRef(z, th, v);
				const dhRef = logSoftmaxGatherBackwardRef(z, ref.lse, th, gh, wh, c, v, temperature);
				const tol = logSoftmaxTolerance(maxAbs(z));
				const gradTol = logSoftmaxGradTolerance(maxAbs(dhRef));
				return [
					{ label: 'logprobs', actual: await readTensor(logprobs), expected: ref.logprobs, ...tol },
					{ label: 'lse', actual: await readTensor(lse), expected: ref.lse, ...tol },
					{ label: 'entropy', actual: await readTensor(entropy), expected: ref.entropy, ...tol },
					{ label: 'dh', actual: await readTensor(dh), expected: dhRef, ...gradTol }
				];
			} finally {
				for (const t of owned) t.release();
			}
		}
	}));
}

/** The in-browser self-test: several chunks with V not a multiple, a chunked W, and an
 * f16 W of odd width whose pieces are copies. */
export const LOGSOFTMAX_SELFTEST = logSoftmaxCases([
	{ n: 5, c: 24, v: 100, chunkRows: 32 },
	{ n: 3, c: 16, v: 77, chunkRows: 20, maxBytes: 30 * 16 * 4, temperature: 0.7 },
	{ n: 4, c: 15, v: 61, chunkRows: 10, maxBytes: 25 * 15 * 2, weight: 'f16' }
]);
