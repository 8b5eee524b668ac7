/**
 * @file Embedding lookup and scatter-add gradient checked against the f64 reference, over a
 * tensor or a ChunkedMatrix of small chunks, with repeated and out-of-range ids. The lookup
 * is a copy: exact (f16 W too). The gradient: 1e-6 * (k + 1) absolute + 1e-5 relative, k the
 * most repeated id's count; with dyadic values every f32 sum is exact, so it must match
 * exactly. status counts bad ids once forward, once backward.
 */
import { ChunkedMatrix, uploadChunkedMatrix } from '../chunked';
import type { Gpu } from '../device';
import { run } from '../kernel';
import { embeddingBackward, embeddingForward, type EmbeddingMatrix } from '../kernels/embedding';
import { embeddingBackwardRef, embeddingRef } from '../reference/embedding';
import { roundToF16 } from '../half';
import { Rng } from '../../util/random';
import { createTensor, readTensor, uploadTensor, type Tensor } from '../tensor';
import type { Comparison, KernelCase } from './types';

export interface EmbeddingCaseSpec {
	tokens: number;
	vocab: number;
	cols: number;
	/** Rows per chunk of W and dW (a ChunkedMatrix); omitted: plain tensors. */
	chunkRows?: number;
	/** 'random': uniform over the vocabulary; 'few': 5 ids spread over it (many repeats);
	 * 'same': every token the same id. */
	ids: 'random' | 'few' | 'same';
	/** How many tokens get an id >= vocab. */
	badIds?: number;
	values?: 'normal' | 'dyadic';
	/** W's dtype for the lookup (default f32); dW is f32 either way. */
	weight?: 'f32' | 'f16';
}

export function embeddingCases(specs: EmbeddingCaseSpec[]): KernelCase[] {
	return specs.map((spec) => ({
		family: 'embedding',
		name:
			`forward+backward N=${spec.tokens} V=${spec.vocab} C=${spec.cols} ` +
			(spec.chunkRows ? `chunks=${Math.ceil(spec.vocab / spec.chunkRows)} ` : 'tensor ') +
			`ids=${spec.ids}${spec.badIds ? ` bad=${spec.badIds}` : ''} ${spec.values ?? 'normal'}` +
			(spec.weight === 'f16' ? ' W f16' : ''),
		run: (gpu: Gpu) => runCase(gpu, spec)
	}));
}

export function embeddingIds(spec: EmbeddingCaseSpec, rng: Rng): Uint32Array {
	const { tokens, vocab } = spec;
	const few = Array.from({ length: 5 }, (_, i) => Math.floor(((i + 0.5) * vocab) / 5));
	const ids = new Uint32Array(tokens);
	for (let t = 0; t < tokens; t++) {
		ids[t] = spec.ids === 'random' ? rng.int(vocab) : spec.ids === 'few' ? few[rng.int(5)] : few[2];
	}
	const bad = [vocab, vocab + 7, 0xffffffff];
	for (let b = 0; b < (spec.badIds ?? 0); b++) ids[rng.int(tokens)] = bad[b % bad.length];
	return ids;
}

/** Reads a [V, C] matrix, chunked or not, into one row-major array (f16 widened). */
export async function readMatrix(m: EmbeddingMatrix): Promise<Float32Array> {
	if (!(m instanceof ChunkedMatrix)) return readTensor(m as Tensor<'f32' | 'f16'>);
	const out = new Float32Array(m.rows * m.cols);
	for (const c of m.chunks) out.set(await readTensor(c.tensor), c.rowOffset * m.cols);
	return out;
}

async function runCase(gpu: Gpu, spec: EmbeddingCaseSpec): Promise<Comparison[]> {
	const { tokens, vocab, cols, chunkRows } = spec;
	const rng = new Rng(tokens * 8191 + vocab * 31 + cols + spec.ids.length);
	const dyadic = spec.values === 'dyadic';
	const values = (n: number) =>
		dyadic ? Float32Array.from({ length: n }, () => (rng.int(1025) - 512) / 256) : rng.normals(n);
	const wh = values(vocab * cols);
	const dw0 = values(vocab * cols);
	const dyh = values(tokens * cols);
	const idsh = embeddingIds(spec, rng);
	const matrix = (data: Float32Array, dtype: 'f32' | 'f16'): EmbeddingMatrix => {
		const bytes = dtype === 'f16' ? 2 : 4;
		return chunkRows
			? uploadChunkedMatrix(gpu, data, vocab, cols, dtype, chunkRows * cols * bytes)
			: uploadTensor(gpu, data, [vocab, cols], dtype);
	};
	const wDtype = spec.weight ?? 'f32';
	// What the lookup reads: the f16-rounded values when W is f16.
	const wRead = wDtype === 'f16' ? roundToF16(wh) : wh;
	const owned: { release(): void }[] = [];
	const keep = <T extends { release(): void }>(x: T) => (owned.push(x), x);
	try {
		const weight = keep(matrix(wh, wDtype));
		const dWeight = keep(matrix(dw0, 'f32'));
		const ids = keep(uploadTensor(gpu, idsh, [tokens], 'u32'));
		const dy = keep(uploadTensor(gpu, dyh, [tokens, cols], 'f32'));
		// Filled with junk: rows of bad ids must be written as zeros, not left alone.
		const junk = new Float32Array(tokens * cols).fill(7);
		const out = keep(uploadTensor(gpu, junk, [tokens, cols], 'f32'));
		const status = keep(createTensor(gpu, [1], 'u32'));
		await run(gpu, (rec) => {
			embeddingForward(rec, { ids, weight, out, status });
			embeddingBackward(rec, { ids, dy, dWeight, status });
		});
		const counts = new Map<number, number>();
		for (const id of idsh) counts.set(id, (counts.get(id) ?? 0) + 1);
		const k = Math.max(...counts.values());
		const bad = idsh.filter((id) => id >= vocab).length;
		return [
			{
				label: 'out',
				actual: await readTensor(out),
				expected: embeddingRef(wRead, idsh, vocab, cols),
				atol: 0,
				rtol: 0
			},
			{
				label: 'dWeight',
				actual: await readMatrix(dWeight),
				expected: embeddingBackwardRef(dw0, idsh, dyh, vocab, cols),
				...(dyadic ? { atol: 0, rtol: 0 } : { atol: 1e-6 * (k + 1), rtol: 1e-5 })
			},
			{ label: 'status', actual: await readTensor(status), expected: [2 * bad], atol: 0, rtol: 0 }
		];
	} finally {
		for (const x of owned) x.release();
	}
}

/** The self-test's sizes: 4 chunks with repeats and bad ids, a plain tensor, and an f16 W
 * of odd width in chunks (rows straddle u32 words). */
export const EMBEDDING_SELFTEST = embeddingCases([
	{ tokens: 37, vocab: 50, cols: 24, chunkRows: 13, ids: 'few', badIds: 2, values: 'dyadic' },
	{ tokens: 300, vocab: 1000, cols: 64, ids: 'random' },
	{ tokens: 40, vocab: 30, cols: 7, chunkRows: 9, ids: 'random', badIds: 1, weight: 'f16' }
]);
