/**
 * @file Extend attention (extend-attention.wgsl.ts): the rows of prompt suffixes over their
 * sequences' cached prefixes, a block of one sequence's consecutive rows per workgroup, so
 * each key and value is read once a block instead of once a row. q, out [R, Hq, D] (or
 * [R, 1, Hq, D]); k, v caches [Bc, S, Hkv, D]; positions and sequences u32 [R]: row r attends
 * keys 0..positions[r] of cache row sequences[r]; blocks u32 [nb, 2] from `extendBlocks`
 * (for the same D and heads per kv head: the kernel scores at most that many rows a block).
 * Computes what decodeAttention computes with `sequences`, in one dispatch.
 */
import { assertShape, OverLimitError } from '../errors';
import { Params, type KernelSource, type Recorder } from '../kernel';
import type { Tensor } from '../tensor';
import { checkCacheAttention, type CacheAttentionArgs } from './decode-attention';
import { extendAttentionWgsl, extendBlockRows } from './extend-attention.wgsl';

export interface ExtendAttentionArgs extends CacheAttentionArgs {
	/** [R, Hq, D] or [R, 1, Hq, D], f32, after RoPE. */
	q: Tensor;
	/** The caches [Bc, S, Hkv, D], f32. */
	k: Tensor;
	v: Tensor;
	/** u32 [R]: each row's position; keys 0..positions[r] are attended. */
	positions: Tensor;
	/** u32 [R]: the cache row each row reads. */
	sequences: Tensor;
	/** u32 [nb, 2] (extendBlocks): each block's first row and row count. */
	blocks: Tensor;
	/** Written: q's shape. */
	out: Tensor;
	/** Multiplies q . k; default 1 / sqrt(D). */
	scale?: number;
}

/** A run of `rows` consecutive rows from `first`, all of one sequence (a prompt's suffix). */
export interface RowRun {
	first: number;
	rows: number;
}

/** The blocks covering the runs, u32 [nb, 2], each of at most the rows the kernel for head
 * size D and G query heads per kv head scores together (extendBlockRows). */
export function extendBlocks(runs: readonly RowRun[], D: number, G: number): Uint32Array {
	const perBlock = extendBlockRows(D, G);
	if (perBlock < 1)
		throw new OverLimitError(`extend attention: head size ${D} x ${G} heads fits no workgroup`);
	const out: number[] = [];
	for (const { first, rows } of runs)
		for (let r = 0; r < rows; r += perBlock) out.push(first + r, Math.min(perBlock, rows - r));
	return Uint32Array.from(out);
}

const kernels = new Map<string, KernelSource>();
function kernel(D: number, G: number, QB: number): KernelSource {
	const name = `extend-attention.d${D}.g${G}.r${QB}`;
	let k = kernels.get(name);
	if (!k) kernels.set(name, (k = { name, code: extendAttentionWgsl(D, G, QB) }));
	return k;
}

/** out = softmax(scale q k^T over keys 0..positions[r]) v, per row and head. */
export function extendAttention(rec: Recorder, args: ExtendAttentionArgs): void {
	const { q, k, v, positions, sequences, blocks, out } = args;
	const what = 'extend attention';
	const { S, Hkv, D, G, scale } = checkCacheAttention(what, args, true, { positions, sequences });
	assertShape(
		blocks.dtype === 'u32' && blocks.size % 2 === 0,
		() => `${what}: blocks must be u32 [nb, 2]; got ${blocks.dtype} [${blocks.shape}]`
	);
	const QB = extendBlockRows(D, G);
	if (QB < 1)
		throw new OverLimitError(
			`${what}: head size ${D} with ${G} query heads per kv head does not fit one workgroup`
		);
	const nb = blocks.size / 2;
	if (nb === 0 || S === 0) return;
	rec.dispatch(
		kernel(D, G, QB),
		[q, k, v, positions, sequences, blocks, out],
		nb * Hkv,
		new Params().u32(nb).u32(S).u32(Hkv).f32(scale)
	);
}
