/**
 * @file A tensor: a GPUBuffer with a shape and a dtype, row-major, dense. Whoever creates
 * one (createTensor, uploadTensor, pool.tensor) owns it and calls `release()` once (pooled
 * buffers return to their pool); kernels never release their inputs or outputs, and free
 * their own temporaries after submission; `Gpu.destroy()` frees everything.
 */
import type { Gpu } from './device';
import { OverLimitError, ShapeMismatchError } from './errors';
import { f16BitsToF32, f32ToF16Bits } from './half';

export type DType = 'f32' | 'f16' | 'u32' | 'i32';
export type TypedArrayOf<D extends DType> = D extends 'f32'
	? Float32Array
	: D extends 'f16'
		? Float32Array // f16 is read back widened to f32; there is no Float16Array in Node 20
		: D extends 'u32'
			? Uint32Array
			: Int32Array;

export const BYTES_PER_ELEMENT: Record<DType, number> = { f32: 4, f16: 2, u32: 4, i32: 4 };

/** STORAGE | COPY_SRC | COPY_DST, as numbers: in Node the GPUBufferUsage global exists
 * only once Dawn is loaded, and this module may load first. */
export const STORAGE_USAGE = 0x0080 | 0x0004 | 0x0008;

export function elementCount(shape: readonly number[]): number {
	let n = 1;
	for (const d of shape) {
		if (!Number.isInteger(d) || d < 0)
			throw new ShapeMismatchError(`bad dimension ${d} in [${shape}]`);
		n *= d;
	}
	return n;
}

/** Buffer sizes are padded to 4 bytes (WebGPU copies and bindings need it). */
export function paddedByteLength(shape: readonly number[], dtype: DType): number {
	return Math.max(4, Math.ceil((elementCount(shape) * BYTES_PER_ELEMENT[dtype]) / 4) * 4);
}

export interface BufferReturn {
	/** Takes back a buffer this tensor no longer needs. */
	giveBack(buffer: GPUBuffer): void;
}

export class Tensor<D extends DType = DType> {
	#released = false;
	constructor(
		readonly gpu: Gpu,
		readonly buffer: GPUBuffer,
		readonly shape: readonly number[],
		readonly dtype: D,
		private readonly owner?: BufferReturn
	) {}

	get size(): number {
		return elementCount(this.shape);
	}
	get byteLength(): number {
		return this.size * BYTES_PER_ELEMENT[this.dtype];
	}
	get released(): boolean {
		return this.#released;
	}

	/** Same buffer seen with another shape of the same element count (the view owns nothing). */
	view(shape: readonly number[]): Tensor<D> {
		if (elementCount(shape) !== this.size)
			throw new ShapeMismatchError(`cannot view [${this.shape}] as [${shape}]`);
		return new Tensor(this.gpu, this.buffer, shape, this.dtype, { giveBack: () => {} });
	}

	release(): void {
		if (this.#released) return;
		this.#released = true;
		if (this.owner) this.owner.giveBack(this.buffer);
		else this.buffer.destroy();
	}
}

/** Throws OverLimitError when one buffer of `bytes` cannot be created or bound on `gpu`. */
export function checkBindable(gpu: Gpu, bytes: number, what: string): void {
	const maxBinding = gpu.limits.maxStorageBufferBindingSize;
	const maxBuffer = gpu.limits.maxBufferSize;
	if (bytes > maxBinding || bytes > maxBuffer) {
		throw new OverLimitError(
			`${what} needs ${formatBytes(bytes)} in one binding, over this device's limit of ` +
				`${formatBytes(Math.min(maxBinding, maxBuffer))} (maxStorageBufferBindingSize). ` +
				'Split it into row chunks (see chunked.ts) or use a smaller model or batch.'
		);
	}
}

export function formatBytes(bytes: number): string {
	if (bytes >= 2 ** 30) return `${(bytes / 2 ** 30).toFixed(2)} GiB`;
	if (bytes >= 2 ** 20) return `${(bytes / 2 ** 20).toFixed(1)} MiB`;
	return `${bytes} B`;
}

export function createTensor<D extends DType>(
	gpu: Gpu,
	shape: readonly number[],
	dtype: D
): Tensor<D> {
	const bytes = paddedByteLength(shape, dtype);
	checkBindable(gpu, bytes, `a [${shape}] ${dtype} tensor`);
	const buffer = gpu.device.createBuffer({ size: bytes, usage: STORAGE_USAGE });
	return new Tensor(gpu, buffer, shape, dtype);
}

/** Encodes host data for `dtype` (f16 from f32 values, rounded to nearest even). */
export function encodeHost(data: ArrayLike<number>, dtype: DType): ArrayBuffer {
	const n = data.length;
	if (dtype === 'f16') {
		const bits = new Uint16Array(n + (n % 2));
		for (let i = 0; i < n; i++) bits[i] = f32ToF16Bits(data[i]);
		return bits.buffer;
	}
	const out =
		dtype === 'f32'
			? new Float32Array(n)
			: dtype === 'u32'
				? new Uint32Array(n)
				: new Int32Array(n);
	for (let i = 0; i < n; i++) out[i] = data[i];
	return out.buffer;
}

export function uploadTensor<D extends DType>(
	gpu: Gpu,
	data: ArrayLike<number>,
	shape: readonly number[],
	dtype: D
): Tensor<D> {
	if (data.length !== elementCount(shape))
		throw new ShapeMismatchError(`${data.length} values do not fill a [${shape}] tensor`);
	const t = createTensor(gpu, shape, dtype);
	writeTensor(t, data);
	return t;
}

export function writeTensor(t: Tensor, data: ArrayLike<number>): void {
	if (data.length !== t.size)
		throw new ShapeMismatchError(`${data.length} values do not fill a [${t.shape}] tensor`);
	const bytes = encodeHost(data, t.dtype);
	t.gpu.device.queue.writeBuffer(t.buffer, 0, bytes, 0, Math.ceil(t.byteLength / 4) * 4);
}

/** Writes raw f16 bits (e.g. a checkpoint's, as stored) into an f16 tensor: no rounding
 * pass on the host, the bytes are what array<f16> (or two halves per u32 word) reads. */
export function writeF16Bits(t: Tensor<'f16'>, bits: Uint16Array): void {
	if (t.dtype !== 'f16' || bits.length !== t.size)
		throw new ShapeMismatchError(
			`${bits.length} f16 values do not fill a [${t.shape}] ${t.dtype} tensor`
		);
	// writeBuffer needs a size and a source offset that are multiples of 4 bytes.
	const aligned = bits.length % 2 === 0 && bits.byteOffset % 4 === 0;
	const src = aligned ? bits : new Uint16Array(bits.length + (bits.length % 2));
	if (!aligned) src.set(bits);
	t.gpu.device.queue.writeBuffer(t.buffer, 0, src.buffer, src.byteOffset, src.byteLength);
}

/** Copies a tensor back to the host (waits for all submitted work on the queue). */
export async function readTensor<D extends DType>(t: Tensor<D>): Promise<TypedArrayOf<D>> {
	const raw = await readBufferBytes(t.gpu, t.buffer, 0, Math.ceil(t.byteLength / 4) * 4);
	return decodeTensorBytes(raw, t.dtype, t.size);
}

/** The first `size` elements of `dtype` in `raw` as readTensor returns them (f16 widened
 * to f32; the others are views of `raw`, not copies). */
export function decodeTensorBytes<D extends DType>(
	raw: ArrayBuffer,
	dtype: D,
	size: number
): TypedArrayOf<D> {
	let out: Float32Array | Uint32Array | Int32Array;
	if (dtype === 'f16') {
		const bits = new Uint16Array(raw, 0, size);
		out = new Float32Array(size);
		for (let i = 0; i < size; i++) out[i] = f16BitsToF32(bits[i]);
	} else if (dtype === 'f32') out = new Float32Array(raw, 0, size);
	else if (dtype === 'u32') out = new Uint32Array(raw, 0, size);
	else out = new Int32Array(raw, 0, size);
	return out as TypedArrayOf<D>;
}

/** Reads `byteLength` bytes (a multiple of 4) at `offset` of any COPY_SRC buffer (one
 * staging buffer and one mapAsync per call: for many, readback.ts's readRanges). */
export async function readBufferBytes(
	gpu: Gpu,
	buffer: GPUBuffer,
	offset: number,
	byteLength: number
): Promise<ArrayBuffer> {
	const staging = gpu.device.createBuffer({
		size: byteLength,
		usage: 0x0001 /* MAP_READ */ | 0x0008 /* COPY_DST */
	});
	try {
		const encoder = gpu.device.createCommandEncoder();
		encoder.copyBufferToBuffer(buffer, offset, staging, 0, byteLength);
		gpu.device.queue.submit([encoder.finish()]);
		await staging.mapAsync(0x0001 /* GPUMapMode.READ */);
		return staging.getMappedRange().slice(0);
	} finally {
		staging.destroy();
	}
}
