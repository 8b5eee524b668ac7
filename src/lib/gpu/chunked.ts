/**
 * @file A [R, C] matrix too large for one storage binding (a 151936 x 896 f32 embedding is
 * 545 MB; devices bind 128 MiB or 1 GiB) kept as row chunks, each a Tensor within the
 * limits; kernels loop over them with each chunk's `rowOffset`. Any dtype (f16: twice the
 * rows per chunk; `uploadChunkedF16Bits` takes raw checkpoint bits). It owns its chunks.
 */
import type { Gpu } from './device';
import {
	BYTES_PER_ELEMENT,
	Tensor,
	createTensor,
	writeF16Bits,
	writeTensor,
	type DType
} from './tensor';

export interface MatrixChunk<D extends DType = DType> {
	/** Rows [rowOffset, rowOffset + rows) of the whole matrix. */
	readonly rowOffset: number;
	readonly rows: number;
	readonly tensor: Tensor<D>;
}

export class ChunkedMatrix<D extends DType = DType> {
	constructor(
		readonly rows: number,
		readonly cols: number,
		readonly dtype: D,
		readonly chunks: readonly MatrixChunk<D>[]
	) {}

	release(): void {
		for (const c of this.chunks) c.tensor.release();
	}
}

/** Rows per chunk so one chunk fits `maxBytes` (defaults to the device's binding limit). */
export function rowsPerChunk(gpu: Gpu, cols: number, dtype: DType, maxBytes?: number): number {
	const limit = Math.min(
		maxBytes ?? Infinity,
		gpu.limits.maxStorageBufferBindingSize,
		gpu.limits.maxBufferSize
	);
	return Math.max(1, Math.floor(limit / (cols * BYTES_PER_ELEMENT[dtype])));
}

/** Allocates a [rows, cols] matrix in as few chunks as the limits allow (`maxBytes`
 * lowers the chunk size, e.g. to test chunking on small matrices). */
export function createChunkedMatrix<D extends DType>(
	gpu: Gpu,
	rows: number,
	cols: number,
	dtype: D,
	maxBytes?: number
): ChunkedMatrix<D> {
	const per = rowsPerChunk(gpu, cols, dtype, maxBytes);
	const chunks: MatrixChunk<D>[] = [];
	try {
		for (let r = 0; r < rows; r += per) {
			const n = Math.min(per, rows - r);
			chunks.push({ rowOffset: r, rows: n, tensor: createTensor(gpu, [n, cols], dtype) });
		}
	} catch (error) {
		for (const c of chunks) c.tensor.release();
		throw error;
	}
	return new ChunkedMatrix(rows, cols, dtype, chunks);
}

/** Uploads row-major host data [rows, cols] into chunks. */
export function uploadChunkedMatrix<D extends DType>(
	gpu: Gpu,
	data: ArrayLike<number> & { subarray?: (a: number, b: number) => ArrayLike<number> },
	rows: number,
	cols: number,
	dtype: D,
	maxBytes?: number
): ChunkedMatrix<D> {
	const m = createChunkedMatrix(gpu, rows, cols, dtype, maxBytes);
	for (const c of m.chunks) {
		const start = c.rowOffset * cols;
		const end = start + c.rows * cols;
		const part = data.subarray
			? data.subarray(start, end)
			: Array.prototype.slice.call(data, start, end);
		writeTensor(c.tensor, part);
	}
	return m;
}

/** Uploads raw f16 bits [rows, cols], row-major, into f16 chunks (as writeF16Bits). */
export function uploadChunkedF16Bits(
	gpu: Gpu,
	bits: Uint16Array,
	rows: number,
	cols: number,
	maxBytes?: number
): ChunkedMatrix<'f16'> {
	const m = createChunkedMatrix(gpu, rows, cols, 'f16', maxBytes);
	try {
		for (const c of m.chunks) {
			const start = c.rowOffset * cols;
			writeF16Bits(c.tensor, bits.subarray(start, start + c.rows * cols));
		}
	} catch (error) {
		m.release();
		throw error;
	}
	return m;
}
