/**
 * Batched readback (gpu/readback.ts): many tensors of odd sizes and dtypes come back
 * exactly as uploaded, in one staging buffer and one submit; split into chunks (a range
 * straddling two) when the staging space is over the cap; raw ranges at offsets inside one
 * buffer return exactly their bytes; misaligned or out-of-bounds ranges are refused.
 * Every tensor holds values no other tensor holds, so a wrong offset shows as a mismatch.
 */
import { describe, expect, it, vi } from 'vitest';
import { ShapeMismatchError } from '../../../src/lib/gpu/errors';
import { readRanges, readTensors } from '../../../src/lib/gpu/readback';
import { readTensor, uploadTensor, type DType, type Tensor } from '../../../src/lib/gpu/tensor';
import type { Gpu } from '../../../src/lib/gpu/device';
import { useGpu } from '../../helpers/gpu';

/** Tensors of 1, 2, 3, 5, 7, ... elements cycling through every dtype; no value occurs in
 * two tensors (f16: the integers j * 128 + i of the j-th f16 tensor, exact in f16 below 2048). */
function oddTensors(g: Gpu, count: number) {
	const dtypes: DType[] = ['f32', 'f16', 'u32', 'i32'];
	const sizes = [1, 2, 3, 5, 7, 11, 13, 17, 31, 64, 65, 127];
	const tensors: Tensor[] = [];
	const expected: number[][] = [];
	for (let k = 0; k < count; k++) {
		const dtype = dtypes[k % dtypes.length];
		const n = sizes[k % sizes.length];
		const values = Array.from({ length: n }, (_, i) =>
			dtype === 'f16'
				? Math.floor(k / 4) * 128 + i
				: dtype === 'f32'
					? k * 1000 + i + 0.25
					: dtype === 'i32'
						? -(k * 1000 + i)
						: 4294967295 - k * 1000 - i
		);
		tensors.push(uploadTensor(g, values, [n], dtype));
		expected.push(values);
	}
	return { tensors, expected };
}

describe('batched readback', () => {
	const gpu = useGpu();

	it('reads many tensors of odd sizes in one staging buffer and one submit', async () => {
		const g = gpu();
		const { tensors, expected } = oddTensors(g, 40); // 10 f16 tensors: j * 128 + i < 2048
		const createBuffer = vi.spyOn(g.device, 'createBuffer');
		const submit = vi.spyOn(g.device.queue, 'submit');
		let back;
		try {
			back = await readTensors(tensors);
			expect(createBuffer).toHaveBeenCalledTimes(1);
			expect(submit).toHaveBeenCalledTimes(1);
		} finally {
			createBuffer.mockRestore();
			submit.mockRestore();
		}
		expect(back.map((a) => Array.from(a))).toEqual(expected);
		for (let k = 0; k < tensors.length; k++) {
			expect(back[k].length).toBe(tensors[k].size);
			expect(back[k].constructor).toBe((await readTensor(tensors[k])).constructor);
		}
		for (const t of tensors) t.release();
	});

	it('splits the staging space over the cap into chunks, ranges straddling them', async () => {
		const g = gpu();
		const { tensors, expected } = oddTensors(g, 24);
		// 12 and 20 bytes: every chunk boundary falls inside some tensor; 4: one word a chunk.
		for (const maxChunkBytes of [4, 12, 22, 1 << 20]) {
			const back = await readTensors(tensors, { maxChunkBytes });
			expect(
				back.map((a) => Array.from(a)),
				`chunks of ${maxChunkBytes}`
			).toEqual(expected);
		}
		for (const t of tensors) t.release();
	});

	it('returns exactly the bytes of raw ranges at offsets of one buffer', async () => {
		const g = gpu();
		const words = Array.from({ length: 64 }, (_, i) => 0x01020304 * (i + 1));
		const t = uploadTensor(g, words, [64], 'u32');
		const all = new Uint8Array(Uint32Array.from(words).buffer);
		const ranges = [
			{ offset: 0, byteLength: 6 },
			{ offset: 8, byteLength: 0 },
			{ offset: 8, byteLength: 13 },
			{ offset: 252, byteLength: 4 },
			{ offset: 4, byteLength: 250 },
			{ offset: 100, byteLength: 1 }
		];
		for (const maxChunkBytes of [undefined, 8]) {
			const back = await readRanges(
				g,
				ranges.map((r) => ({ buffer: t.buffer, ...r })),
				{ maxChunkBytes }
			);
			for (const [i, r] of ranges.entries()) {
				expect(back[i].byteLength).toBe(r.byteLength);
				expect(new Uint8Array(back[i])).toEqual(all.subarray(r.offset, r.offset + r.byteLength));
			}
		}
		expect(await readRanges(g, [])).toEqual([]);
		t.release();
	});

	it('refuses unaligned offsets and ranges past the end of their buffer', async () => {
		const g = gpu();
		const t = uploadTensor(g, [1, 2, 3], [3], 'f32'); // a 12-byte buffer
		await expect(readRanges(g, [{ buffer: t.buffer, offset: 2, byteLength: 4 }])).rejects.toThrow(
			ShapeMismatchError
		);
		await expect(readRanges(g, [{ buffer: t.buffer, offset: 8, byteLength: 5 }])).rejects.toThrow(
			ShapeMismatchError
		);
		t.release();
	});
});
