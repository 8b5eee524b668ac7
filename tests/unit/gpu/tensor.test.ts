import { describe, expect, it } from 'vitest';
import {
	createChunkedMatrix,
	uploadChunkedF16Bits,
	uploadChunkedMatrix
} from '../../../src/lib/gpu/chunked';
import { OverLimitError, ShapeMismatchError } from '../../../src/lib/gpu/errors';
import { f16BitsToF32, f32ToF16Bits, roundToF16 } from '../../../src/lib/gpu/half';
import { BufferPool, sizeClass } from '../../../src/lib/gpu/pool';
import { Rng } from '../../../src/lib/util/random';
import { Recorder } from '../../../src/lib/gpu/kernel';
import {
	createTensor,
	readBufferBytes,
	readTensor,
	uploadTensor,
	writeF16Bits
} from '../../../src/lib/gpu/tensor';
import { useGpu } from '../../helpers/gpu';

describe('tensors', () => {
	const gpu = useGpu();

	it('round-trips every dtype, including odd f16 lengths', async () => {
		const g = gpu();
		const f32 = uploadTensor(g, [1.5, -2, 3.25], [3], 'f32');
		const u32 = uploadTensor(g, [0, 7, 4294967295], [3], 'u32');
		const i32 = uploadTensor(g, [-1, 0, 2147483647], [3], 'i32');
		const f16 = uploadTensor(g, [0.1, -65504, 1e-7], [3], 'f16');
		expect(Array.from(await readTensor(f32))).toEqual([1.5, -2, 3.25]);
		expect(Array.from(await readTensor(u32))).toEqual([0, 7, 4294967295]);
		expect(Array.from(await readTensor(i32))).toEqual([-1, 0, 2147483647]);
		expect(Array.from(await readTensor(f16))).toEqual(Array.from(roundToF16([0.1, -65504, 1e-7])));
		for (const t of [f32, u32, i32, f16]) t.release();
	});

	it('rejects data that does not fill the shape, and views of another size', () => {
		const g = gpu();
		expect(() => uploadTensor(g, [1, 2, 3], [2, 2], 'f32')).toThrow(ShapeMismatchError);
		const t = createTensor(g, [2, 3], 'f32');
		expect(t.view([3, 2]).shape).toEqual([3, 2]);
		expect(() => t.view([4, 2])).toThrow(ShapeMismatchError);
		t.release();
	});

	it('refuses a tensor over the binding limit before allocating, with the numbers', () => {
		const g = gpu();
		const cols = 1024;
		const rows = Math.floor(g.limits.maxStorageBufferBindingSize / (cols * 4)) + 1;
		expect(() => createTensor(g, [rows, cols], 'f32')).toThrow(OverLimitError);
		expect(() => createTensor(g, [rows, cols], 'f32')).toThrow(/maxStorageBufferBindingSize/);
	});

	it('splits a matrix over one binding into row chunks and keeps its rows', async () => {
		const g = gpu();
		const rows = 37;
		const cols = 5;
		const data = new Rng(3).normals(rows * cols);
		// 8 rows of 5 f32 per chunk: 37 rows -> 5 chunks (8, 8, 8, 8, 5).
		const m = uploadChunkedMatrix(g, data, rows, cols, 'f32', 8 * cols * 4);
		expect(m.chunks.map((c) => c.rows)).toEqual([8, 8, 8, 8, 5]);
		expect(m.chunks.map((c) => c.rowOffset)).toEqual([0, 8, 16, 24, 32]);
		const back = new Float32Array(rows * cols);
		for (const c of m.chunks) back.set(await readTensor(c.tensor), c.rowOffset * cols);
		expect(back).toEqual(data);
		m.release();
		// Without a cap, a small matrix is one chunk.
		const one = createChunkedMatrix(g, rows, cols, 'f32');
		expect(one.chunks.length).toBe(1);
		one.release();
	});

	it('uploads raw f16 bits as they are: odd lengths, unaligned views, odd-width chunks', async () => {
		const g = gpu();
		const [rows, cols] = [7, 3];
		const bits = Uint16Array.from({ length: rows * cols + 1 }, (_, i) =>
			f32ToF16Bits((i - 10) * 0.37)
		);
		const values = (b: Uint16Array) => Array.from(b, f16BitsToF32);
		// A view starting at an odd element (2-byte aligned only), of an odd length.
		const view = bits.subarray(1, 1 + rows * cols);
		const t = createTensor(g, [rows, cols], 'f16');
		writeF16Bits(t, view);
		expect(Array.from(await readTensor(t))).toEqual(values(view));
		expect(() => writeF16Bits(t, bits)).toThrow(ShapeMismatchError);
		t.release();
		// 2 rows of 3 halves per chunk: chunks of 6 halves, the last of 3, at odd offsets.
		const m = uploadChunkedF16Bits(g, view, rows, cols, 2 * cols * 2);
		expect(m.dtype).toBe('f16');
		expect(m.chunks.map((c) => c.rows)).toEqual([2, 2, 2, 1]);
		const back: number[] = [];
		for (const c of m.chunks) back.push(...(await readTensor(c.tensor)));
		expect(back).toEqual(values(view));
		m.release();
	});
});

describe('buffer pool', () => {
	const gpu = useGpu();

	it('reuses a released buffer of the same size class once the queue is done', async () => {
		const pool = new BufferPool(gpu());
		const a = pool.tensor([100], 'f32');
		const buffer = a.buffer;
		a.release();
		await gpu().device.queue.onSubmittedWorkDone();
		await new Promise((r) => setTimeout(r, 0));
		const b = pool.tensor([120], 'f32'); // 400 and 480 bytes share the 512 class
		expect(b.buffer).toBe(buffer);
		expect(pool.stats.liveBytes).toBe(512);
		b.release();
		pool.trim();
	});

	it('serves Recorder scratch: reused once the GPU is done, zeroed like a fresh buffer', async () => {
		const g = gpu();
		const pool = new BufferPool(g);
		const ones = uploadTensor(g, new Array(100).fill(1), [100], 'f32');
		const first = new Recorder(g, pool);
		const scratch = first.scratch(400);
		first.copy(ones.buffer, 0, scratch, 0, 400);
		await first.submit();
		expect(pool.stats).toEqual({ liveBytes: 0, freeBytes: 512 });
		const second = new Recorder(g, pool);
		const again = second.scratch(300); // 300 and 400 bytes share the 512 class
		expect(again).toBe(scratch);
		await second.submit();
		const bytes = new Float32Array(await readBufferBytes(g, again, 0, 400));
		expect(bytes.every((v) => v === 0)).toBe(true);
		ones.release();
		pool.trim();
	});

	it('size classes: powers of two to 1 MiB, then whole MiB', () => {
		expect(sizeClass(1)).toBe(256);
		expect(sizeClass(257)).toBe(512);
		expect(sizeClass(2 ** 20)).toBe(2 ** 20);
		expect(sizeClass(2 ** 20 + 1)).toBe(2 * 2 ** 20);
	});
});

describe('half precision on the host', () => {
	it('matches IEEE binary16 at the edges', () => {
		expect(f32ToF16Bits(1)).toBe(0x3c00);
		expect(f32ToF16Bits(-2)).toBe(0xc000);
		expect(f32ToF16Bits(65504)).toBe(0x7bff);
		expect(f32ToF16Bits(65520)).toBe(0x7c00); // rounds to infinity
		expect(f32ToF16Bits(2 ** -24)).toBe(0x0001); // smallest subnormal
		expect(f32ToF16Bits(2 ** -26)).toBe(0x0000); // below half of it: zero
		expect(f32ToF16Bits(1 + 2 ** -11)).toBe(0x3c00); // a tie rounds to even
		expect(f32ToF16Bits(1 + 3 * 2 ** -11)).toBe(0x3c02);
		expect(Number.isNaN(f16BitsToF32(f32ToF16Bits(NaN)))).toBe(true);
		for (let bits = 0; bits < 0x7c00; bits += 97)
			expect(f32ToF16Bits(f16BitsToF32(bits))).toBe(bits);
	});
});
