import { describe, expect, it } from 'vitest';
import type { Gpu } from '../../../src/lib/gpu/device';
import {
	MissingFeatureError,
	OverLimitError,
	ShapeMismatchError
} from '../../../src/lib/gpu/errors';
import { run } from '../../../src/lib/gpu/kernel';
import {
	TILE_LARGE,
	TILE_MEDIUM,
	TILE_SMALL,
	TILE_TALL,
	matmul,
	matmulTiled,
	type MatmulArgs
} from '../../../src/lib/gpu/kernels/matmul';
import { matmulCases } from '../../../src/lib/gpu/selftest/matmul';
import { createTensor, type Tensor } from '../../../src/lib/gpu/tensor';
import { itRunsCases, useGpu } from '../../helpers/gpu';

const TRANSPOSES = [
	{ transA: false, transB: false },
	{ transA: false, transB: true },
	{ transA: true, transB: false },
	{ transA: true, transB: true }
];

describe('matmul', () => {
	const gpu = useGpu();

	// Every transpose combination, on a vec4-able shape and a shape off every multiple of 4.
	itRunsCases(
		matmulCases(
			TRANSPOSES.flatMap((t) => [
				{ m: 1, n: 1, k: 1, ...t },
				{ m: 17, n: 33, k: 65, ...t },
				{ m: 36, n: 44, k: 52, ...t }
			])
		),
		gpu
	);

	itRunsCases(
		matmulCases([
			// Each tile shape, off its multiples, scalar and vec4 access.
			...[TILE_LARGE, TILE_TALL, TILE_MEDIUM, TILE_SMALL].flatMap((tile) => [
				{ m: 131, n: 70, k: 19, tile },
				{ m: 132, n: 68, k: 20, transB: true, tile }
			]),
			// Split-K: partial sums over K slices, then a reduce that applies alpha / beta.
			{ m: 20, n: 24, k: 700, tile: TILE_SMALL, splits: 3 },
			{ m: 21, n: 13, k: 300, tile: TILE_SMALL, splits: 4, transA: true, alpha: 0.5, beta: 1 },
			{ m: 12, n: 8, k: 260, tile: TILE_SMALL, splits: 2, batch: 2, aBatched: true, beta: -1 },
			// alpha / beta: scaling, and accumulation into c.
			{ m: 20, n: 24, k: 28, alpha: -0.5, beta: 1 },
			{ m: 19, n: 23, k: 29, transA: true, alpha: 2, beta: 0.25 },
			// Batched: b shared by every batch (weights), a shared, both batched.
			{ m: 13, n: 24, k: 40, batch: 3, aBatched: true, transB: true },
			{ m: 16, n: 10, k: 7, batch: 2, bBatched: true, transA: true, beta: 1 },
			{ m: 12, n: 12, k: 12, batch: 4, aBatched: true, bBatched: true },
			{ m: 9, n: 17, k: 33, batch: 3, aBatched: true, bBatched: true, transB: true },
			// Sizes off the tiles; the largest SwiftShader allows in a few seconds.
			{ m: 100, n: 300, k: 200 },
			{ m: 100, n: 300, k: 200, transA: true },
			// LoRA-like rank-8 products (4096x8x576 scaled down): x A^T, (x A^T) B^T, dB = dy^T (xA).
			{ m: 512, n: 8, k: 576, transB: true },
			{ m: 512, n: 576, k: 8, transB: true, beta: 1 },
			{ m: 576, n: 8, k: 512, transA: true }
		]),
		gpu
	);

	function tensors(g: Gpu, shapes: number[][]): Tensor[] {
		return shapes.map((s) => createTensor(g, s, 'f32'));
	}
	async function expectReject(
		args: MatmulArgs,
		error: new (...a: never[]) => Error,
		text?: RegExp
	) {
		const p = run(args.a.gpu, (rec) => matmul(rec, args));
		await expect(p).rejects.toThrow(error);
		if (text) await expect(run(args.a.gpu, (rec) => matmul(rec, args))).rejects.toThrow(text);
	}

	it('rejects mismatched inner dims, saying the shapes', async () => {
		const [a, b, c] = tensors(gpu(), [
			[4, 5],
			[6, 7],
			[4, 7]
		]);
		await expectReject({ a, b, c }, ShapeMismatchError, /a \[4,5\] @ b \[6,7\]/);
		for (const t of [a, b, c]) t.release();
	});

	it('rejects a c of the wrong shape, and honours transposes when checking', async () => {
		const [a, b, c, cT] = tensors(gpu(), [
			[4, 5],
			[7, 5],
			[4, 5],
			[4, 7]
		]);
		await expectReject({ a, b, c, transB: true }, ShapeMismatchError);
		await expectReject({ a, b, c: cT }, ShapeMismatchError);
		await run(gpu(), (rec) => matmul(rec, { a, b, c: cT, transB: true }));
		for (const t of [a, b, c, cT]) t.release();
	});

	it('rejects batch dims that differ, and c aliasing an input', async () => {
		const [a, b, c] = tensors(gpu(), [
			[2, 4, 5],
			[3, 5, 6],
			[3, 4, 6]
		]);
		await expectReject({ a, b, c }, ShapeMismatchError, /batch/);
		const [sq] = tensors(gpu(), [[4, 4]]);
		await expectReject({ a: sq, b: sq, c: sq }, ShapeMismatchError, /share/);
		for (const t of [a, b, c, sq]) t.release();
	});

	it('rejects operands of rank 1 or 4 and non-float dtypes', async () => {
		const g = gpu();
		const [v, m4, c] = tensors(g, [[5], [1, 1, 4, 5], [4, 4]]);
		const [b] = tensors(g, [[5, 4]]);
		await expectReject({ a: v, b, c }, ShapeMismatchError);
		await expectReject({ a: m4, b, c }, ShapeMismatchError);
		const ai = createTensor(g, [4, 5], 'u32');
		await expectReject({ a: ai, b, c }, ShapeMismatchError, /f32/);
		for (const t of [v, m4, c, b, ai]) t.release();
	});

	it('rejects a tile over the device limits, and f16 without shader-f16', async () => {
		const g = gpu();
		const [a, b, c] = tensors(g, [
			[8, 8],
			[8, 8],
			[8, 8]
		]);
		const huge = { bm: 256, bn: 256, bk: 16, tm: 16, tn: 16, doubleBuffer: true }; // 64 KiB staged
		await expect(run(g, (rec) => matmulTiled(rec, { a, b, c }, huge))).rejects.toThrow(
			OverLimitError
		);
		if (!g.caps.f16) {
			const a16 = createTensor(g, [8, 8], 'f16');
			await expectReject({ a: a16, b, c }, MissingFeatureError);
			a16.release();
		}
		for (const t of [a, b, c]) t.release();
	});
});
