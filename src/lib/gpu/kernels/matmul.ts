/**
 * @file Matmul, the GEMM of every linear layer and its gradients: c = alpha * op(a) @ op(b)
 * + beta * c, row-major, op(x) = x^T when trans is set, optionally batched (an unbatched
 * operand is shared by every batch). beta = 0 overwrites c unread, so NaN there never leaks.
 * Variants (WGSL in matmul.wgsl.ts), chosen by dtypes, shape and gpu.caps: tiled f32 (vec4
 * when M, N, K are multiples of 4; split-K when few tiles and a long K), tiled with f16
 * operands (f32 arithmetic; read as u32 words without `shader-f16`), and subgroup-matrix
 * (tensor cores) for f16 operands on whole tiles with alpha 1, beta 0. Tiles and thresholds
 * (gpu.tuning) come from an H200 sweep: bench/results/2026-12-02-h200-run2-sweep.json.
 */
import type { Gpu } from '../device';
import { OverLimitError, ShapeMismatchError, assertShape } from '../errors';
import { Params, type KernelSource, type Recorder } from '../kernel';
import type { Tensor } from '../tensor';
import { tuningOf } from '../tuning';
import {
	MATMUL_SPLITK_REDUCE,
	sgmatName,
	sgmatTile,
	sgmatWgsl,
	threadsOf,
	tiledMatmulWgsl,
	tileShapeProblem,
	variantName,
	workgroupBytes,
	type OperandType,
	type SubgroupMatrixVariant,
	type TileShape,
	type TiledVariant
} from './matmul.wgsl';

export interface MatmulArgs {
	a: Tensor;
	b: Tensor;
	c: Tensor;
	/** op(a) = transA ? a^T : a, per batch. */
	transA?: boolean;
	transB?: boolean;
	/** c = alpha * op(a) @ op(b) + beta * c. Defaults 1 and 0 (beta = 0: c is not read). */
	alpha?: number;
	beta?: number;
}

/** The GEMM a call resolves to. */
export interface MatmulProblem {
	m: number;
	n: number;
	k: number;
	/** Batches of c (1 when c is unbatched). */
	batch: number;
	/** Elements between consecutive batches of a (0: shared), of b. */
	strideA: number;
	strideB: number;
	aType: OperandType;
	bType: OperandType;
}

/** 256 invocations, 8x8 each; 16 KiB staged (double-buffered), the WebGPU default limit. */
export const TILE_LARGE: TileShape = { bm: 128, bn: 128, bk: 8, tm: 8, tn: 8, doubleBuffer: true };
/** 128 invocations, 8x8 each; 12 KiB staged. */
export const TILE_TALL: TileShape = { bm: 128, bn: 64, bk: 8, tm: 8, tn: 8, doubleBuffer: true };
/** 256 invocations, 4x4 each; 16 KiB staged. */
export const TILE_MEDIUM: TileShape = { bm: 64, bn: 64, bk: 16, tm: 4, tn: 4, doubleBuffer: true };
/** 64 invocations, 4x4 each; 4 KiB staged. */
export const TILE_SMALL: TileShape = { bm: 32, bn: 32, bk: 8, tm: 4, tn: 4, doubleBuffer: true };

function dims(t: Tensor): readonly number[] {
	return t.shape.length === 2 ? [1, ...t.shape] : t.shape;
}

/** Checks the operands fit together; returns the GEMM they describe. */
export function matmulProblem(args: MatmulArgs): MatmulProblem {
	const { a, b, c, transA = false, transB = false } = args;
	const describe = () =>
		`matmul: a [${a.shape}]${transA ? '^T' : ''} @ b [${b.shape}]${transB ? '^T' : ''} -> ` +
		`c [${c.shape}]`;
	assertShape(
		[a, b, c].every((t) => t.shape.length === 2 || t.shape.length === 3),
		() => `${describe()}: each operand must be [rows, cols] or [batch, rows, cols]`
	);
	const [ba, a0, a1] = dims(a);
	const [bb, b0, b1] = dims(b);
	const [batch, m, n] = dims(c);
	const am = transA ? a1 : a0;
	const k = transA ? a0 : a1;
	const bk = transB ? b1 : b0;
	const bn = transB ? b0 : b1;
	assertShape(
		am === m && bn === n && bk === k,
		() => `${describe()}: op(a) is [${am}, ${k}], op(b) is [${bk}, ${bn}], c needs [${am}, ${bn}]`
	);
	const batchedA = a.shape.length === 3 && ba !== 1;
	const batchedB = b.shape.length === 3 && bb !== 1;
	assertShape(
		(!batchedA || ba === batch) && (!batchedB || bb === batch),
		() =>
			`${describe()}: batch dims differ (a ${ba}, b ${bb}, c ${batch}); an unbatched operand is shared`
	);
	assertShape(
		c.dtype === 'f32' &&
			(a.dtype === 'f32' || a.dtype === 'f16') &&
			(b.dtype === 'f32' || b.dtype === 'f16'),
		() => `${describe()}: c must be f32 and a, b f32 or f16; got ${a.dtype}, ${b.dtype}, ${c.dtype}`
	);
	assertShape(
		c.buffer !== a.buffer && c.buffer !== b.buffer,
		() => `${describe()}: c must not share a buffer with a or b`
	);
	return {
		m,
		n,
		k,
		batch,
		strideA: batchedA ? m * k : 0,
		strideB: batchedB ? k * n : 0,
		aType: a.dtype as OperandType,
		bType: b.dtype as OperandType
	};
}

/** Generated sources by variant name: a hot loop dispatches the same few many times. */
const sources = new Map<string, KernelSource>();
function kernelFor(v: TiledVariant): KernelSource {
	const name = variantName(v);
	let k = sources.get(name);
	if (!k) sources.set(name, (k = { name, code: tiledMatmulWgsl(v) }));
	return k;
}

function fits(gpu: Gpu, t: TileShape): boolean {
	return (
		threadsOf(t) <= gpu.limits.maxComputeInvocationsPerWorkgroup &&
		workgroupBytes(t) <= gpu.limits.maxComputeWorkgroupStorageSize
	);
}

/** The tile shape for a problem, by output size (the rule the H200 sweep supports, see the
 * file's doc): 128x128 from gpu.tuning.largeTileOutputs (8M on every row of tuning.ts),
 * 128x64 from tallTileOutputs (1M), 64x64 (4x4) below, where split-K (chooseSplits) then
 * makes up the workgroups a long K allows; 32x32 below mediumTileOutputs (every size on a
 * CPU renderer, tuning.ts). Falls back to smaller tiles on devices with less workgroup
 * memory or fewer invocations. */
export function chooseTile(gpu: Gpu, p: MatmulProblem): TileShape {
	const { largeTileOutputs, tallTileOutputs, mediumTileOutputs } = tuningOf(gpu);
	const outputs = p.m * p.n * p.batch;
	const order =
		outputs >= largeTileOutputs
			? [TILE_LARGE, TILE_TALL, TILE_MEDIUM]
			: outputs >= tallTileOutputs
				? [TILE_TALL, TILE_MEDIUM]
				: outputs >= mediumTileOutputs
					? [TILE_MEDIUM]
					: [];
	return order.find((t) => fits(gpu, t)) ?? TILE_SMALL;
}

/** c = alpha * op(a) @ op(b) + beta * c with the variant chosen for this shape and device. */
export function matmul(rec: Recorder, args: MatmulArgs): void {
	const p = matmulProblem(args);
	// Tensor cores for f16 operands. Only for beta = 0 for now: the kernel's beta = 1 path
	// (accumulators start from c) has not been checked on a device yet.
	if (p.aType === 'f16' && p.bType === 'f16' && rec.gpu.caps.subgroupMatrix && !args.beta) {
		const large = p.m * p.n * p.batch >= tuningOf(rec.gpu).largeTileOutputs;
		const layout = large ? SGMAT_LARGE : SGMAT_DEFAULT;
		const v =
			sgmatVariant(rec.gpu, args, layout, p) ?? sgmatVariant(rec.gpu, args, SGMAT_DEFAULT, p);
		if (v) return dispatchSgmat(rec, args, v, p);
	}
	matmulTiled(rec, args, chooseTile(rec.gpu, p), p);
}

/** How a subgroup-matrix kernel is laid out, apart from the device's fragment shape. */
export interface SgmatLayout {
	wm: number;
	wn: number;
	sm: number;
	sn: number;
	staged: boolean;
	bk: number;
	/** Fragment shape [M, N, K]; default: the device's first f16 -> f32 config. */
	fragment?: readonly [number, number, number];
}

/** 4 subgroups, each 2x2 fragments of 16x16 (a 64x64 tile: every SmolLM2 shape fits),
 * staged 32 deep: 148 TFLOP/s on 49152x4096x576 (TN) on the H200, where loading the
 * fragments straight from storage reached 57 (see BENCHMARKS.md). */
export const SGMAT_DEFAULT: SgmatLayout = { wm: 2, wn: 2, sm: 2, sn: 2, staged: true, bk: 32 };
/** 4 subgroups, each 4x4 fragments (a 128x128 tile), for outputs of 8M and more: 142 /
 * 130 / 156 TFLOP/s at 4096^3 NN / NT / TN where the 64x64 layout reached 120 / 93 / 144. */
export const SGMAT_LARGE: SgmatLayout = { wm: 2, wn: 2, sm: 4, sn: 4, staged: true, bk: 32 };

/** The subgroup-matrix variant for a call, or null when the device or shape rules it out
 * (no f16 -> f32 config, varying subgroup size, shape off the tile, alpha != 1, beta not
 * 0 or 1: the kernel has no scalar epilogue, those take the tiled path). */
export function sgmatVariant(
	gpu: Gpu,
	args: MatmulArgs,
	layout: SgmatLayout,
	problem?: MatmulProblem
): SubgroupMatrixVariant | null {
	const p = problem ?? matmulProblem(args);
	if (!gpu.caps.subgroupMatrix || !gpu.caps.f16 || p.aType !== 'f16' || p.bType !== 'f16')
		return null;
	const { subgroupMinSize, subgroupMaxSize, subgroupMatrixConfigs } = gpu.adapter;
	if (!subgroupMaxSize || subgroupMinSize !== subgroupMaxSize) return null;
	const config = subgroupMatrixConfigs.find(
		(c) =>
			c.componentType === 'f16' &&
			c.resultComponentType === 'f32' &&
			(!layout.fragment ||
				(c.M === layout.fragment[0] && c.N === layout.fragment[1] && c.K === layout.fragment[2]))
	);
	if (!config) return null;
	const v: SubgroupMatrixVariant = {
		transA: args.transA ?? false,
		transB: args.transB ?? false,
		type: 'f16',
		fm: config.M,
		fn: config.N,
		fk: config.K,
		...layout,
		subgroupSize: subgroupMaxSize
	};
	const { bm, bn, bk } = sgmatTile(v);
	const threads = v.wm * v.wn * v.subgroupSize;
	const ok =
		(args.alpha ?? 1) === 1 &&
		((args.beta ?? 0) === 0 || args.beta === 1) &&
		p.m % bm === 0 &&
		p.n % bn === 0 &&
		p.k % bk === 0 &&
		p.k > 0 &&
		(!v.staged || bk % v.fk === 0) &&
		threads <= gpu.limits.maxComputeInvocationsPerWorkgroup;
	return ok ? v : null;
}

/** Runs a subgroup-matrix variant (from `sgmatVariant`). */
export function dispatchSgmat(
	rec: Recorder,
	args: MatmulArgs,
	v: SubgroupMatrixVariant,
	problem?: MatmulProblem
): void {
	const p = problem ?? matmulProblem(args);
	const { bm, bn } = sgmatTile(v);
	const tilesN = p.n / bn;
	const [x, y] = workgroupGrid(rec.gpu, (p.m / bm) * tilesN, p.batch, p);
	const name = sgmatName(v);
	let kernel = sources.get(name);
	if (!kernel) sources.set(name, (kernel = { name, code: sgmatWgsl(v) }));
	rec.dispatch(kernel, [args.a, args.b, args.c], [x, y, p.batch], params(p, args, tilesN));
}

function params(
	p: MatmulProblem,
	scale: { alpha?: number; beta?: number },
	tilesN: number,
	splits = 1,
	kChunk = p.k
): Params {
	return new Params()
		.u32(p.m)
		.u32(p.n)
		.u32(p.k)
		.u32(p.strideA)
		.u32(p.strideB)
		.f32(scale.alpha ?? 1)
		.f32(scale.beta ?? 0)
		.u32(tilesN)
		.u32(splits)
		.u32(kChunk);
}

/** [x, y] workgroups for `tiles` output tiles (folded past the per-dimension limit). */
function workgroupGrid(gpu: Gpu, tiles: number, batch: number, p: MatmulProblem): [number, number] {
	const max = gpu.limits.maxComputeWorkgroupsPerDimension;
	if (batch > max)
		throw new OverLimitError(`matmul: ${batch} batches exceed the dispatch limit of ${max}`);
	const x = Math.min(tiles, max);
	const y = Math.ceil(tiles / x);
	if (y > max)
		throw new OverLimitError(
			`matmul: [${p.m}, ${p.n}] needs ${tiles} workgroups, over this device's dispatch limit`
		);
	return [x, y];
}

/** A split-K slice is at least this deep, so its partial-sum write (M*N) stays small
 * next to its arithmetic (2*M*N*depth). */
const MIN_SPLIT_DEPTH = 256;
const MAX_SPLITS = 16;

/** How many K slices to compute in parallel for a problem on a tile (1: no split): enough
 * for the output tiles times the slices to reach gpu.tuning.targetWorkgroups (264 on the
 * H200: two per SM, measured), none shallower than MIN_SPLIT_DEPTH. */
export function chooseSplits(gpu: Gpu, p: MatmulProblem, tile: TileShape): number {
	const { targetWorkgroups } = tuningOf(gpu);
	const workgroups = Math.ceil(p.m / tile.bm) * Math.ceil(p.n / tile.bn) * p.batch;
	if (workgroups >= targetWorkgroups) return 1;
	let splits = Math.min(
		Math.ceil(targetWorkgroups / workgroups),
		Math.floor(p.k / MIN_SPLIT_DEPTH),
		MAX_SPLITS
	);
	const maxScratch = Math.min(gpu.limits.maxStorageBufferBindingSize, gpu.limits.maxBufferSize);
	while (splits > 1 && splits * p.batch * p.m * p.n * 4 > maxScratch) splits--;
	return Math.max(1, splits);
}

/** The K slices `matmul` would split an unbatched f32 c [m, n] = op(a) [m, k] op(b) [k, n] into
 * (1: none); memory estimates size the partial sums, splits * m * n floats, from it. */
export function splitKCount(gpu: Gpu, m: number, n: number, k: number): number {
	if (m === 0 || n === 0) return 1;
	const p: MatmulProblem = {
		m,
		n,
		k,
		batch: 1,
		strideA: 0,
		strideB: 0,
		aType: 'f32',
		bType: 'f32'
	};
	return chooseSplits(gpu, p, chooseTile(gpu, p));
}

const REDUCE: KernelSource = { name: 'matmul.splitk.reduce', code: MATMUL_SPLITK_REDUCE };

/** The tiled kernel with a given tile shape (benchmarks sweep these; `matmul` chooses).
 * `splits`: K slices computed in parallel and summed by a second pass (default: chosen). */
export function matmulTiled(
	rec: Recorder,
	args: MatmulArgs,
	tile: TileShape,
	problem?: MatmulProblem,
	splits?: number
): void {
	const gpu = rec.gpu;
	const p = problem ?? matmulProblem(args);
	const shapeProblem = tileShapeProblem(tile);
	if (shapeProblem) throw new ShapeMismatchError(`matmul tile: ${shapeProblem}`);
	if (!fits(gpu, tile))
		throw new OverLimitError(
			`matmul tile ${tile.bm}x${tile.bn}x${tile.bk} needs ${threadsOf(tile)} invocations and ` +
				`${workgroupBytes(tile)} B of workgroup memory; this device allows ` +
				`${gpu.limits.maxComputeInvocationsPerWorkgroup} and ` +
				`${gpu.limits.maxComputeWorkgroupStorageSize} B`
		);
	if (p.m === 0 || p.n === 0 || p.batch === 0) return;
	const variant: TiledVariant = {
		...tile,
		transA: args.transA ?? false,
		transB: args.transB ?? false,
		vec4: p.m % 4 === 0 && p.n % 4 === 0 && p.k % 4 === 0,
		aType: p.aType,
		bType: p.bType,
		packedF16: (p.aType === 'f16' || p.bType === 'f16') && !gpu.caps.f16
	};
	let s = Math.max(1, Math.floor(splits ?? chooseSplits(gpu, p, tile)));
	// Slices are whole BK steps; recount so none is empty.
	const kChunk = Math.max(tile.bk, Math.ceil(Math.ceil(p.k / s) / tile.bk) * tile.bk);
	s = Math.max(1, Math.ceil(p.k / kChunk));
	const tilesN = Math.ceil(p.n / tile.bn);
	const [x, y] = workgroupGrid(gpu, Math.ceil(p.m / tile.bm) * tilesN, p.batch * s, p);
	const partial = s > 1 ? rec.scratch(s * p.batch * p.m * p.n * 4) : null;
	rec.dispatch(
		kernelFor(variant),
		[args.a, args.b, partial ?? args.c],
		[x, y, p.batch * s],
		params(p, partial ? { alpha: 1, beta: 0 } : args, tilesN, s, kChunk)
	);
	if (partial) {
		const total = p.batch * p.m * p.n;
		rec.dispatch(
			REDUCE,
			[partial, args.c],
			Math.ceil(total / 256),
			new Params()
				.u32(p.m * p.n)
				.u32(total)
				.u32(s)
				.f32(args.alpha ?? 1)
				.f32(args.beta ?? 0)
		);
	}
}
