/**
 * @file Batched readback: many buffer ranges copied to the host through one staging
 * buffer, submit and mapAsync (each mapAsync drains the queue, a GPU-process round trip in
 * a tab). Ranges packed at 4-byte offsets (copies need multiples of 4; only byteLength
 * comes back); over maxBufferSize (or `maxChunkBytes`) split into chunks read one at a
 * time. Staging buffers are destroyed before it returns; a read waits for prior work.
 */
import type { Gpu } from './device';
import { ShapeMismatchError } from './errors';
import { decodeTensorBytes, type DType, type Tensor, type TypedArrayOf } from './tensor';

/** `byteLength` bytes at `offset` (a multiple of 4) of a COPY_SRC buffer. */
export interface ReadRange {
	buffer: GPUBuffer;
	offset: number;
	byteLength: number;
}

export interface ReadbackOptions {
	/** Largest staging buffer to use (capped by the device's maxBufferSize); tests set it
	 * small to exercise the split. */
	maxChunkBytes?: number;
}

const align4 = (n: number) => Math.ceil(n / 4) * 4;

/** Copies every range to the host in one batch; one ArrayBuffer of exactly `byteLength`
 * bytes per range, in order. */
export async function readRanges(
	gpu: Gpu,
	ranges: readonly ReadRange[],
	options: ReadbackOptions = {}
): Promise<ArrayBuffer[]> {
	const cap = Math.min(options.maxChunkBytes ?? Infinity, gpu.limits.maxBufferSize);
	const chunkBytes = Math.floor(cap / 4) * 4;
	if (!(chunkBytes >= 4)) throw new RangeError(`a staging chunk of ${cap} bytes is too small`);
	// Where each range's copy starts in the staging space, and how long it is.
	const starts: number[] = [];
	const copies: number[] = [];
	let total = 0;
	for (const r of ranges) {
		const copy = align4(r.byteLength);
		if (!(Number.isInteger(r.offset) && r.offset >= 0 && r.offset % 4 === 0))
			throw new ShapeMismatchError(`a readback offset must be a multiple of 4, got ${r.offset}`);
		if (!(Number.isInteger(r.byteLength) && r.byteLength >= 0) || r.offset + copy > r.buffer.size)
			throw new ShapeMismatchError(
				`cannot read ${r.byteLength} bytes (${copy} with padding) at ${r.offset} of a ` +
					`${r.buffer.size}-byte buffer`
			);
		starts.push(total);
		copies.push(copy);
		total += copy;
	}
	const out = ranges.map((r) => new ArrayBuffer(r.byteLength));
	let first = 0; // the first range not wholly read yet
	for (let chunkStart = 0; chunkStart < total; chunkStart += chunkBytes) {
		const chunkEnd = Math.min(total, chunkStart + chunkBytes);
		const staging = gpu.device.createBuffer({
			size: chunkEnd - chunkStart,
			usage: 0x0001 /* MAP_READ */ | 0x0008 /* COPY_DST */
		});
		try {
			const encoder = gpu.device.createCommandEncoder();
			const pieces: { range: number; lo: number; hi: number }[] = [];
			for (let i = first; i < ranges.length && starts[i] < chunkEnd; i++) {
				const lo = Math.max(starts[i], chunkStart);
				const hi = Math.min(starts[i] + copies[i], chunkEnd);
				if (hi <= lo) continue; // empty range
				const r = ranges[i];
				encoder.copyBufferToBuffer(
					r.buffer,
					r.offset + (lo - starts[i]),
					staging,
					lo - chunkStart,
					hi - lo
				);
				pieces.push({ range: i, lo, hi });
			}
			gpu.device.queue.submit([encoder.finish()]);
			await staging.mapAsync(0x0001 /* GPUMapMode.READ */);
			const mapped = new Uint8Array(staging.getMappedRange());
			for (const { range, lo, hi } of pieces) {
				// Drop the padding: only the range's own bytes come back.
				const end = Math.min(hi, starts[range] + ranges[range].byteLength);
				if (end > lo)
					new Uint8Array(out[range]).set(
						mapped.subarray(lo - chunkStart, end - chunkStart),
						lo - starts[range]
					);
			}
			while (first < ranges.length && starts[first] + copies[first] <= chunkEnd) first++;
		} finally {
			staging.destroy();
		}
	}
	return out;
}

/** Reads every tensor back in one batch, decoded as readTensor decodes one (f16 widened
 * to f32). All must live on the same device. */
export async function readTensors<D extends DType>(
	tensors: readonly Tensor<D>[],
	options: ReadbackOptions = {}
): Promise<TypedArrayOf<D>[]> {
	if (tensors.length === 0) return [];
	const gpu = tensors[0].gpu;
	if (tensors.some((t) => t.gpu !== gpu))
		throw new ShapeMismatchError('readTensors reads tensors of one device at a time');
	const raw = await readRanges(
		gpu,
		tensors.map((t) => ({
			buffer: t.buffer,
			offset: 0,
			byteLength: t.byteLength
		})),
		options
	);
	return raw.map((bytes, i) => decodeTensorBytes(bytes, tensors[i].dtype, tensors[i].size));
}
