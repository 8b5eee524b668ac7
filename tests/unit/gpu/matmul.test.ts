import { describe, expect, it } from 'vitest';
import type { Gpu } from '../../../src/lib/gpu/device';
import { OverLimitError, ShapeMismatchError } from '../../../src/lib/gpu/errors';
import { run } from '../../../src/lib/gpu/kernel';
import {
	TILE_LARGE,
	TILE_MEDIUM,
	TILE_SMALL,
	TILE_TALL,
	SGMAT_DEFAULT,
	matmul,
	matmulTiled,
	sgmatVariant,
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

	// f16 weights (the B operand: x W^T forward, dy W backward), and f16 A: native f16 where
	// the device has shader-f16, else u32 words widened with unpack2x16float (SwiftShader).
	itRunsCases(
		matmulCases([
			{ m: 36, n: 44, k: 52, transB: true, bType: 'f16' },
			{ m: 36, n: 44, k: 52, bType: 'f16', beta: 1 },
			{ m: 17, n: 33, k: 65, transB: true, bType: 'f16' },
			{ m: 17, n: 33, k: 65, bType: 'f16' },
			{ m: 19, n: 23, k: 29, transA: true, aType: 'f16', bType: 'f16', alpha: 2 },
			{ m: 20, n: 24, k: 700, tile: TILE_SMALL, splits: 3, transB: true, bType: 'f16' },
			{ m: 13, n: 24, k: 40, batch: 3, aBatched: true, transB: true, bType: 'f16' }
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

	it('rejects a tile over the device limits', async () => {
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
		for (const t of [a, b, c]) t.release();
	});

	it('takes the subgroup-matrix path only where its tile, config and alpha/beta allow', () => {
		// A device like the H200 with Dawn's unsafe toggles (no such device here: the WGSL
		// itself is checked on the H200 by the benchmark, see BENCHMARKS.md).
		const fake = {
			caps: { f16: true, subgroups: true, subgroupMatrix: true, timestampQuery: false },
			limits: { maxComputeInvocationsPerWorkgroup: 1024 },
			adapter: {
				subgroupMinSize: 32,
				subgroupMaxSize: 32,
				subgroupMatrixConfigs: [
					{ componentType: 'f16', resultComponentType: 'f16', M: 16, N: 16, K: 16 },
					{ componentType: 'f16', resultComponentType: 'f32', M: 16, N: 16, K: 16 }
				]
			}
		} as unknown as Gpu;
		const t = (shape: number[], dtype: 'f16' | 'f32' = 'f16') =>
			({ shape, dtype, buffer: {}, size: shape.reduce((a, b) => a * b, 1) }) as unknown as Tensor;
		const ok = { a: t([128, 64]), b: t([64, 192]), c: t([128, 192], 'f32') };
		const v = sgmatVariant(fake, ok, SGMAT_DEFAULT);
		expect(v && [v.fm, v.fn, v.fk, v.type]).toEqual([16, 16, 16, 'f16']);
		expect(sgmatVariant(fake, { ...ok, beta: 1 }, SGMAT_DEFAULT)).not.toBeNull();
		expect(sgmatVariant(fake, { ...ok, alpha: 0.5 }, SGMAT_DEFAULT)).toBeNull();
		expect(sgmatVariant(fake, { ...ok, beta: 0.5 }, SGMAT_DEFAULT)).toBeNull();
		// M off the 64-row tile, K off the 32-deep staging step, f32 operands.
		expect(
			sgmatVariant(fake, { ...ok, a: t([96, 64]), c: t([96, 192], 'f32') }, SGMAT_DEFAULT)
		).toBeNull();
		expect(
			sgmatVariant(fake, { ...ok, a: t([128, 48]), b: t([48, 192]) }, SGMAT_DEFAULT)
		).toBeNull();
		expect(sgmatVariant(fake, { ...ok, a: t([128, 64], 'f32') }, SGMAT_DEFAULT)).toBeNull();
		const noF32 = { ...fake, adapter: { ...fake.adapter, subgroupMatrixConfigs: [] } } as Gpu;
		expect(sgmatVariant(noF32, ok, SGMAT_DEFAULT)).toBeNull();
	});
});
