/**
 * @file RoPE over q or k as projections produce them, [B, T, H, D] (or [T, H, D]): forward
 * (+angle) and backward (-angle), in place or not. Positions u32, [B * T] (padding and
 * KV-cache offsets are the caller's) or [T] shared by the batch. Frequencies come as
 * inv_freq [D / 2] (`ropeInvFreq` the default); rope_scaling variants are the model's
 * inv_freq and `attentionScaling`, not separate kernels.
 */
import { assertShape, OverLimitError } from '../errors';
import { Params, type Recorder } from '../kernel';
import { uploadTensor, type Tensor } from '../tensor';
import type { Gpu } from '../device';
import { ROPE_WG, ropeWgsl } from './rope.wgsl';

const OUT_OF_PLACE = { name: 'rope', code: ropeWgsl(false) };
const IN_PLACE = { name: 'rope.inplace', code: ropeWgsl(true) };

/**
 * Default inv_freq [D / 2]: theta^(-2i / D), as transformers'
 * _compute_default_rope_parameters computes it in f32: 1 / theta ** (f32(2i) / D). Each
 * step here is done in f64 and rounded to f32, i.e. correctly rounded f32 operations;
 * torch's f32 pow may differ by 1 ulp in a few entries (1 ulp of inv_freq is 6e-8
 * relative, 2e-3 rad at position 30000), so for bit-exact parity with a checkpoint the
 * model layer should compute inv_freq the same way torch did or compare against it.
 */
export function ropeInvFreq(theta: number, dim: number): Float32Array {
	if (!(Number.isInteger(dim) && dim > 0 && dim % 2 === 0))
		throw new RangeError(`ropeInvFreq: head dim must be a positive even integer, got ${dim}`);
	if (!(theta > 1 && Number.isFinite(theta)))
		throw new RangeError(`ropeInvFreq: theta must be a finite number > 1, got ${theta}`);
	const out = new Float32Array(dim / 2);
	for (let i = 0; i < dim / 2; i++) {
		const exponent = Math.fround((2 * i) / dim);
		out[i] = Math.fround(1 / Math.fround(theta ** exponent));
	}
	return out;
}

/** Uploads `ropeInvFreq(theta, dim)` as an f32 tensor [D / 2] (the caller owns it). */
export function uploadRopeInvFreq(gpu: Gpu, theta: number, dim: number): Tensor<'f32'> {
	return uploadTensor(gpu, ropeInvFreq(theta, dim), [dim / 2], 'f32');
}

export interface RopeArgs {
	/** [B, T, H, D] or [T, H, D], f32. */
	x: Tensor;
	/** Output of x's shape; omitted or x itself: rotate x in place. */
	y?: Tensor;
	/** u32 [B * T] (per token) or [T] (shared by the batch). */
	positions: Tensor;
	/** f32 [D / 2]. */
	invFreq: Tensor;
	/** Multiplies cos and sin (transformers' attention_scaling); default 1. */
	attentionScaling?: number;
}

/** The rotation's own checks, for every kernel that rotates as RoPE does: an even head
 * size `dim` with f32 inv_freq [dim / 2], a finite scaling. */
export function checkRotation(
	what: string,
	dim: number,
	invFreq: Tensor,
	attentionScaling: number
): void {
	assertShape(
		dim % 2 === 0 && invFreq.dtype === 'f32' && invFreq.size * 2 === dim,
		() =>
			`${what}: head dim ${dim} needs an even D and f32 inv_freq [${dim / 2}]; ` +
			`got ${invFreq.dtype} [${invFreq.shape}] (partial rotary is not supported)`
	);
	if (!Number.isFinite(attentionScaling))
		throw new RangeError(`${what}: attentionScaling must be finite, got ${attentionScaling}`);
}

function dispatchRope(rec: Recorder, args: RopeArgs, sign: 1 | -1, what: string): void {
	const { x, positions, invFreq, attentionScaling = 1 } = args;
	const y = args.y ?? x;
	const rank = x.shape.length;
	assertShape(
		(rank === 3 || rank === 4) && x.dtype === 'f32',
		() => `${what}: x must be f32 [B, T, H, D] or [T, H, D]; got ${x.dtype} [${x.shape}]`
	);
	const [dim, heads, seq] = [x.shape[rank - 1], x.shape[rank - 2], x.shape[rank - 3]];
	const rows = rank === 4 ? x.shape[0] * seq : seq;
	checkRotation(what, dim, invFreq, attentionScaling);
	assertShape(
		positions.dtype === 'u32' && (positions.size === rows || positions.size === seq),
		() =>
			`${what}: positions must be u32 [${rows}] (one per token) or [${seq}] (per step); ` +
			`got ${positions.dtype} [${positions.shape}]`
	);
	assertShape(
		y.dtype === 'f32' && y.size === x.size && y.shape[y.shape.length - 1] === dim,
		() => `${what}: y must be f32 of x's shape [${x.shape}]; got ${y.dtype} [${y.shape}]`
	);
	const pairs = x.size / 2;
	if (pairs >= 2 ** 32 - ROPE_WG)
		throw new OverLimitError(`${what}: ${pairs} pairs exceed a u32 index`);
	if (x.size === 0) return;
	const inPlace = y.buffer === x.buffer;
	const params = new Params()
		.u32(rows)
		.u32(heads)
		.u32(dim / 2)
		.u32(positions.size)
		.f32(sign)
		.f32(attentionScaling);
	const workgroups = Math.ceil(pairs / ROPE_WG);
	if (inPlace) rec.dispatch(IN_PLACE, [x, positions, invFreq], workgroups, params);
	else rec.dispatch(OUT_OF_PLACE, [x, positions, invFreq, y], workgroups, params);
}

/** y = rope(x): rotation of each pair (i, i + D/2) by +pos * inv_freq[i], times scaling. */
export function ropeForward(rec: Recorder, args: RopeArgs): void {
	dispatchRope(rec, args, 1, 'rope');
}

/** dx from dy (pass dy as `x`, dx as `y`): rotation by -pos * inv_freq[i], times scaling. */
export function ropeBackward(rec: Recorder, args: RopeArgs): void {
	dispatchRope(rec, args, -1, 'rope backward');
}
