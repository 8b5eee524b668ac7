/**
 * @file Causal grouped-query self-attention with right padding and a query offset (for a
 * KV cache), forward and backward, on the tensors' natural layout: q, out [B, T, Hq, D],
 * k, v [B, Tk, Hkv, D], lse [B, Hq, T], lengths u32 [B]. See attention.wgsl.ts for the
 * kernels and the mask rules; reference/attention.ts for the plain math they must match.
 */
import { OverLimitError, assertShape } from '../errors';
import { Params, type KernelSource, type Recorder } from '../kernel';
import { checkBindable, type Tensor } from '../tensor';
import {
	MAX_HEAD_DIM,
	ROWS_PER_WORKGROUP,
	dkdvWgsl,
	dqWgsl,
	forwardWgsl,
	rowStatsWgsl
} from './attention.wgsl';

export interface AttentionForwardArgs {
	q: Tensor;
	k: Tensor;
	v: Tensor;
	/** Written: [B, T, Hq, D]. */
	out: Tensor;
	/** Written: the logsumexp of each query row's scores [B, Hq, T], kept for backward. */
	lse: Tensor;
	/** u32 [B]: keys and queries at positions >= lengths[b] are padding. */
	lengths: Tensor;
	/** Multiplies q . k; defaults to 1 / sqrt(D). */
	scale?: number;
	/** Position of query row 0: keys 0..qOffset-1 come from a cache. Default 0. */
	qOffset?: number;
}

export interface AttentionBackwardArgs extends Omit<AttentionForwardArgs, 'out' | 'lse'> {
	/** The forward's out and lse (read only here). */
	out: Tensor;
	lse: Tensor;
	dout: Tensor;
	/** Written: [B, T, Hq, D]. */
	dq: Tensor;
	/** Written: [B, Tk, Hkv, D], summed over the query heads of each kv head. */
	dk: Tensor;
	dv: Tensor;
}

interface Dims {
	B: number;
	T: number;
	Tk: number;
	Hq: number;
	Hkv: number;
	D: number;
	qOffset: number;
	scale: number;
}

type Stage = 'forward' | 'rowstats' | 'dq' | 'dkdv';
const WGSL: Record<Stage, (D: number) => string> = {
	forward: forwardWgsl,
	rowstats: rowStatsWgsl,
	dq: dqWgsl,
	dkdv: dkdvWgsl
};
const kernels = new Map<string, KernelSource>();

/** One pipeline per stage and head size (D is a WGSL constant). */
function kernel(stage: Stage, D: number): KernelSource {
	const name = `attention.${stage}.d${D}`;
	let source = kernels.get(name);
	if (!source) kernels.set(name, (source = { name, code: WGSL[stage](D) }));
	return source;
}

const same = (a: Tensor, shape: readonly number[]) =>
	a.dtype === 'f32' && a.shape.length === shape.length && a.shape.every((d, i) => d === shape[i]);

/** Checks every operand against q's and k's shapes; returns the sizes. */
function dims(args: AttentionForwardArgs, what: string): Dims {
	const { q, k, v, out, lse, lengths } = args;
	assertShape(
		q.shape.length === 4 && k.shape.length === 4 && q.dtype === 'f32',
		() =>
			`${what}: q must be f32 [B, T, Hq, D] and k [B, Tk, Hkv, D]; got [${q.shape}], [${k.shape}]`
	);
	const [B, T, Hq, D] = q.shape;
	const [Bk, Tk, Hkv, Dk] = k.shape;
	const qOffset = args.qOffset ?? 0;
	assertShape(
		Bk === B && Dk === D && same(k, k.shape) && same(v, k.shape),
		() =>
			`${what}: k and v must be f32 [${B}, Tk, Hkv, ${D}] like q [${q.shape}]; ` +
			`got k [${k.shape}], v [${v.shape}]`
	);
	assertShape(
		Hkv > 0 && Hq % Hkv === 0,
		() => `${what}: query heads (${Hq}) must be a multiple of kv heads (${Hkv})`
	);
	assertShape(
		Number.isInteger(qOffset) && qOffset >= 0 && Tk >= qOffset + T,
		() => `${what}: keys (Tk = ${Tk}) must cover qOffset (${qOffset}) + T (${T})`
	);
	assertShape(
		same(out, q.shape) && same(lse, [B, Hq, T]),
		() =>
			`${what}: out must be f32 [${q.shape}] and lse f32 [${B}, ${Hq}, ${T}]; ` +
			`got out [${out.shape}] ${out.dtype}, lse [${lse.shape}] ${lse.dtype}`
	);
	assertShape(
		lengths.dtype === 'u32' && lengths.shape.length === 1 && lengths.shape[0] === B,
		() => `${what}: lengths must be u32 [${B}]; got ${lengths.dtype} [${lengths.shape}]`
	);
	if (D < 1 || D > MAX_HEAD_DIM) {
		throw new OverLimitError(
			`${what}: head size ${D} is outside 1..${MAX_HEAD_DIM}, the sizes these kernels ` +
				'keep per invocation. Use a model with a smaller head_dim.'
		);
	}
	return { B, T, Tk, Hq, Hkv, D, qOffset, scale: args.scale ?? 1 / Math.sqrt(D) };
}

function params(d: Dims): Params {
	return new Params().u32(d.B).u32(d.T).u32(d.Tk).u32(d.Hq).u32(d.Hkv).u32(d.qOffset).f32(d.scale);
}

const ceilDiv = (a: number, b: number) => Math.ceil(a / b);

/** out = softmax(scale q k^T, causal and padding masked) v; saves lse for the backward. */
export function attentionForward(rec: Recorder, args: AttentionForwardArgs): void {
	const d = dims(args, 'attention');
	const { q, k, v, lengths, out, lse } = args;
	rec.dispatch(
		kernel('forward', d.D),
		[q, k, v, lengths, out, lse],
		d.B * d.Hq * ceilDiv(d.T, ROWS_PER_WORKGROUP),
		params(d)
	);
}

/** dq, dk, dv of sum(dout * out), recomputing probabilities from q, k and lse. */
export function attentionBackward(rec: Recorder, args: AttentionBackwardArgs): void {
	const d = dims(args, 'attention backward');
	const { q, k, v, out, dout, lse, lengths, dq, dk, dv } = args;
	assertShape(
		same(dout, q.shape) && same(dq, q.shape) && same(dk, k.shape) && same(dv, k.shape),
		() =>
			`attention backward: dout and dq must be f32 [${q.shape}], dk and dv f32 [${k.shape}]; ` +
			`got dout [${dout.shape}], dq [${dq.shape}], dk [${dk.shape}], dv [${dv.shape}]`
	);
	const rows = d.B * d.Hq * d.T;
	const statsBytes = rows * 8; // (lse, D_i) as vec2<f32> per query row
	checkBindable(rec.gpu, statsBytes, 'attention backward row statistics');
	const stats = rec.scratch(statsBytes);
	const p = params(d);
	rec.dispatch(
		kernel('rowstats', d.D),
		[out, dout, lse, lengths, stats],
		ceilDiv(rows, ROWS_PER_WORKGROUP),
		p
	);
	rec.dispatch(
		kernel('dq', d.D),
		[q, k, v, dout, stats, lengths, dq],
		d.B * d.Hq * ceilDiv(d.T, ROWS_PER_WORKGROUP),
		p
	);
	rec.dispatch(
		kernel('dkdv', d.D),
		[q, k, v, dout, stats, lengths, dk, dv],
		d.B * d.Hkv * ceilDiv(d.Tk, ROWS_PER_WORKGROUP),
		p
	);
}
