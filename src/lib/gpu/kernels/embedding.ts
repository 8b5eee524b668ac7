/**
 * @file Embedding lookup and its gradient over W [V, C], a ChunkedMatrix or one Tensor;
 * ids u32 [N]. The lookup reads f32 or f16 W (out f32, exact); dW is f32. Host ids go
 * through `uploadTokenIds` (out of [0, V): ShapeMismatchError). Ids made on the GPU are
 * never read out of bounds: an id >= V gets a zero row, adds nothing to dW and is counted
 * in `status[0]` (u32 [1]) when given.
 */
import type { Gpu } from '../device';
import { assertShape, OverLimitError } from '../errors';
import { ChunkedMatrix, type MatrixChunk } from '../chunked';
import { Params, type Recorder } from '../kernel';
import { uploadTensor, type Tensor } from '../tensor';
import {
	EMBEDDING_BACKWARD,
	EMBEDDING_FORWARD,
	EMBEDDING_FORWARD_F16,
	EMBEDDING_LINK,
	EMBEDDING_WG
} from './embedding.wgsl';

const FORWARD = { name: 'embedding.forward', code: EMBEDDING_FORWARD };
const FORWARD_F16 = { name: 'embedding.forward.f16', code: EMBEDDING_FORWARD_F16 };
const LINK = { name: 'embedding.link', code: EMBEDDING_LINK };
const BACKWARD = { name: 'embedding.backward', code: EMBEDDING_BACKWARD };

/** A [V, C] matrix (f32; f16 for the lookup's W): row chunks, or one tensor. */
export type EmbeddingMatrix = ChunkedMatrix<'f32' | 'f16'> | Tensor;

interface Matrix {
	rows: number;
	cols: number;
	dtype: string;
	chunks: readonly MatrixChunk[];
}

/** `dtypes`: what the caller accepts (the lookup f32 or f16, the gradient f32). */
function asMatrix(m: EmbeddingMatrix, what: string, dtypes: readonly string[]): Matrix {
	const allowed = dtypes.join(' or ');
	if (m instanceof ChunkedMatrix) {
		assertShape(
			dtypes.includes(m.dtype),
			() => `${what} must be ${allowed}; got a ${m.dtype} ChunkedMatrix`
		);
		return m;
	}
	assertShape(
		m.shape.length === 2 && dtypes.includes(m.dtype),
		() =>
			`${what} must be an ${allowed} [V, C] tensor or ChunkedMatrix; got ${m.dtype} [${m.shape}]`
	);
	const [rows, cols] = m.shape;
	return { rows, cols, dtype: m.dtype, chunks: [{ rowOffset: 0, rows, tensor: m }] };
}

/** Checks host token ids against the vocabulary and uploads them as u32 [N] (the caller
 * owns the tensor). Throws ShapeMismatchError naming the first bad id. */
export function uploadTokenIds(gpu: Gpu, ids: ArrayLike<number>, vocab: number): Tensor<'u32'> {
	for (let t = 0; t < ids.length; t++) {
		const id = ids[t];
		assertShape(
			Number.isInteger(id) && id >= 0 && id < vocab,
			() =>
				`token id ${id} at position ${t} is outside the vocabulary [0, ${vocab}); ` +
				'check that the tokenizer belongs to this model'
		);
	}
	return uploadTensor(gpu, ids, [ids.length], 'u32');
}

function checkIds(ids: Tensor, what: string): number {
	assertShape(ids.dtype === 'u32', () => `${what}: ids must be u32; got ${ids.dtype}`);
	return ids.size;
}

function checkStatus(status: Tensor | undefined, what: string): void {
	assertShape(
		!status || (status.dtype === 'u32' && status.size === 1),
		() => `${what}: status must be u32 [1]; got ${status?.dtype} [${status?.shape}]`
	);
}

function checkRows(n: number, cols: number, t: Tensor, name: string, what: string): void {
	assertShape(
		t.dtype === 'f32' && t.size === n * cols && (n === 0 || t.shape[t.shape.length - 1] === cols),
		() => `${what}: ${name} must be f32 [${n}, ${cols}]; got ${t.dtype} [${t.shape}]`
	);
	if (n * cols >= 2 ** 32 - EMBEDDING_WG)
		throw new OverLimitError(`${what}: ${n} x ${cols} elements exceed a u32 index`);
}

function chunkParams(n: number, m: Matrix, c: MatrixChunk, first: boolean): Params {
	return new Params()
		.u32(n)
		.u32(m.cols)
		.u32(c.rowOffset)
		.u32(c.rows)
		.u32(m.rows)
		.u32(first ? 1 : 0);
}

/** out [N, C] = weight[ids] (weight f32 or f16, out f32); rows of ids >= V are zero (and
 * counted in `status`). */
export function embeddingForward(
	rec: Recorder,
	args: { ids: Tensor; weight: EmbeddingMatrix; out: Tensor; status?: Tensor }
): void {
	const what = 'embedding';
	const n = checkIds(args.ids, what);
	const m = asMatrix(args.weight, `${what}: weight`, ['f32', 'f16']);
	checkRows(n, m.cols, args.out, 'out', what);
	checkStatus(args.status, what);
	if (n * m.cols === 0) return;
	const status = args.status ?? rec.scratch(4);
	const workgroups = Math.ceil((n * m.cols) / EMBEDDING_WG);
	m.chunks.forEach((c, i) => {
		const bindings = [args.ids, c.tensor, args.out, status];
		const kernel = m.dtype === 'f16' ? FORWARD_F16 : FORWARD;
		rec.dispatch(kernel, bindings, workgroups, chunkParams(n, m, c, i === 0));
	});
}

/** dW[ids[t], :] += dy[t, :] for every token, deterministically (tokens with ids >= V
 * are skipped and counted in `status`). dW has weight's shape, chunked or not. */
export function embeddingBackward(
	rec: Recorder,
	args: { ids: Tensor; dy: Tensor; dWeight: EmbeddingMatrix; status?: Tensor }
): void {
	const what = 'embedding backward';
	const n = checkIds(args.ids, what);
	const m = asMatrix(args.dWeight, `${what}: dWeight`, ['f32']);
	checkRows(n, m.cols, args.dy, 'dy', what);
	checkStatus(args.status, what);
	if (n * m.cols === 0) return;
	const status = args.status ?? rec.scratch(4);
	const links = rec.scratch(2 * n * 4); // fresh, so zeroed, as EMBEDDING_LINK needs
	const tokenGroups = Math.ceil(n / EMBEDDING_WG);
	rec.dispatch(LINK, [args.ids, links, status], tokenGroups, new Params().u32(n).u32(m.rows));
	const workgroups = Math.ceil((n * m.cols) / EMBEDDING_WG);
	m.chunks.forEach((c, i) => {
		const bindings = [args.ids, links, args.dy, c.tensor];
		rec.dispatch(BACKWARD, bindings, workgroups, chunkParams(n, m, c, i === 0));
	});
}
