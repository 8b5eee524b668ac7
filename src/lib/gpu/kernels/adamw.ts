/**
 * @file AdamW (torch.optim.AdamW) over parameter tensors, clipped by the global gradient
 * norm (clip_grad_norm_), on the GPU with no readback: 2 dispatches per tensor + 1 (one flat
 * tensor: 3). The stats tensor (f32 [4], STATS) holds the norm, the scale and a skipped
 * flag: with an Inf or NaN norm nothing changes and the step must not advance. Gradients
 * are read, never scaled in place.
 */
import { assertShape, OverLimitError } from '../errors';
import { Params, type Recorder } from '../kernel';
import { readTensor, type Tensor } from '../tensor';
import {
	ADAMW_UPDATE,
	ADAMW_WG,
	GRAD_NORM_FINAL,
	GRAD_SQ_PARTIALS,
	MAX_SLOTS_PER_TENSOR,
	STATS
} from './adamw.wgsl';

export { STATS as GRAD_NORM_STATS };

const PARTIALS = { name: 'adamw.grad_sq_partials', code: GRAD_SQ_PARTIALS };
const FINAL = { name: 'adamw.grad_norm_final', code: GRAD_NORM_FINAL };
const UPDATE = { name: 'adamw.update', code: ADAMW_UPDATE };

/** One parameter tensor with its gradient and optimizer state, all f32 of one size. */
export interface AdamWSlot {
	param: Tensor;
	grad: Tensor;
	/** First moment (exp_avg), zero before step 1. */
	m: Tensor;
	/** Second moment (exp_avg_sq), zero before step 1. */
	v: Tensor;
}

/** Per-call hyperparameters (an lr schedule changes lr every step). torch's defaults. */
export interface AdamWHyper {
	lr?: number;
	beta1?: number;
	beta2?: number;
	eps?: number;
	weightDecay?: number;
	/** 1 for the first step; bias correction uses it. */
	step: number;
	/** Clip to this global L2 norm; undefined: no clipping (the norm is still computed). */
	maxNorm?: number;
}

export const ADAMW_DEFAULTS = { lr: 1e-3, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 1e-2 };

/** What the stats tensor says after a step. */
export interface GradNormStats {
	/** Global L2 norm of the gradients before clipping (Inf or NaN when skipped). */
	norm: number;
	/** Factor the gradients were multiplied by (0 when skipped). */
	scale: number;
	/** True when the norm was not finite and nothing was updated. */
	skipped: boolean;
}

function slotsFor(n: number): number {
	return Math.max(1, Math.min(MAX_SLOTS_PER_TENSOR, Math.ceil(n / ADAMW_WG)));
}

function checkStats(stats: Tensor): void {
	assertShape(
		stats.dtype === 'f32' && stats.size === STATS.length,
		() => `adamw: stats must be f32 [${STATS.length}]; got ${stats.dtype} [${stats.shape}]`
	);
}

/**
 * Global L2 norm of `grads` into `stats` ([norm, scale, skipped, sumSq]); scale is
 * min(1, maxNorm / (norm + 1e-6)) when maxNorm is given, else 1.
 */
export function gradNorm(
	rec: Recorder,
	args: { grads: readonly Tensor[]; stats: Tensor; maxNorm?: number }
): void {
	const { grads, stats, maxNorm } = args;
	checkStats(stats);
	assertShape(grads.length > 0, () => 'gradNorm: no gradients given');
	for (const [i, g] of grads.entries()) {
		assertShape(g.dtype === 'f32', () => `gradNorm: grads[${i}] is ${g.dtype}, not f32`);
	}
	if (maxNorm !== undefined && !(maxNorm > 0 && Number.isFinite(maxNorm))) {
		throw new RangeError(`gradNorm: maxNorm must be a positive finite number, got ${maxNorm}`);
	}
	const totalSlots = grads.reduce((s, g) => s + slotsFor(g.size), 0);
	const maxSlots = rec.gpu.limits.maxStorageBufferBindingSize / 4;
	if (totalSlots > maxSlots) {
		throw new OverLimitError(`gradNorm: ${grads.length} tensors need too many partial slots`);
	}
	const partials = rec.scratch(totalSlots * 4);
	let offset = 0;
	for (const g of grads) {
		// An empty tensor still owns one slot, which its dispatch sets to 0.
		const slots = slotsFor(g.size);
		rec.dispatch(PARTIALS, [g, partials], slots, new Params().u32(g.size).u32(offset).u32(slots));
		offset += slots;
	}
	const clip = maxNorm === undefined ? 0 : 1;
	rec.dispatch(
		FINAL,
		[partials, stats],
		1,
		new Params()
			.u32(totalSlots)
			.u32(clip)
			.f32(maxNorm ?? 0)
	);
}

/** The AdamW update of every slot, scaled and gated by `stats` from `gradNorm`. */
export function adamwUpdate(
	rec: Recorder,
	args: { slots: readonly AdamWSlot[]; stats: Tensor } & AdamWHyper
): void {
	const { slots, stats } = args;
	const h = resolveHyper(args);
	checkStats(stats);
	checkSlots(slots);
	// Scalars as torch forms them, in double precision on the host.
	const bc1 = 1 - h.beta1 ** h.step;
	const bc2 = 1 - h.beta2 ** h.step;
	for (const s of slots) {
		const n = s.param.size;
		if (n === 0) continue;
		const params = new Params()
			.u32(n)
			.f32(1 - h.lr * h.weightDecay)
			.f32(1 - h.beta1)
			.f32(h.beta2)
			.f32(1 - h.beta2)
			.f32(h.lr / bc1)
			.f32(Math.sqrt(bc2))
			.f32(h.eps);
		rec.dispatch(UPDATE, [s.param, s.grad, s.m, s.v, stats], Math.ceil(n / ADAMW_WG), params);
	}
}

/** One optimizer step: global norm (and clip scale) of all grads, then AdamW on every slot. */
export function adamwStep(
	rec: Recorder,
	args: { slots: readonly AdamWSlot[]; stats: Tensor } & AdamWHyper
): void {
	// Every check before gradNorm records anything.
	resolveHyper(args);
	checkSlots(args.slots);
	gradNorm(rec, { grads: args.slots.map((s) => s.grad), stats: args.stats, maxNorm: args.maxNorm });
	adamwUpdate(rec, args);
}

/** Reads the stats tensor a step wrote (waits for the GPU). */
export async function readGradNormStats(stats: Tensor): Promise<GradNormStats> {
	checkStats(stats);
	const s = await readTensor(stats);
	return { norm: s[STATS.norm], scale: s[STATS.scale], skipped: s[STATS.skipped] !== 0 };
}

function checkSlots(slots: readonly AdamWSlot[]): void {
	for (const [i, s] of slots.entries()) {
		const n = s.param.size;
		assertShape(
			[s.param, s.grad, s.m, s.v].every((t) => t.dtype === 'f32' && t.size === n),
			() =>
				`adamw: slots[${i}] needs f32 param, grad, m, v of one size; got ` +
				`param ${s.param.dtype} [${s.param.shape}], grad ${s.grad.dtype} [${s.grad.shape}], ` +
				`m ${s.m.dtype} [${s.m.shape}], v ${s.v.dtype} [${s.v.shape}]`
		);
	}
}

/** The hyperparameters with torch's defaults filled in; RangeError when out of range. */
function resolveHyper(args: AdamWHyper): Required<Omit<AdamWHyper, 'maxNorm'>> {
	const h = {
		lr: args.lr ?? ADAMW_DEFAULTS.lr,
		beta1: args.beta1 ?? ADAMW_DEFAULTS.beta1,
		beta2: args.beta2 ?? ADAMW_DEFAULTS.beta2,
		eps: args.eps ?? ADAMW_DEFAULTS.eps,
		weightDecay: args.weightDecay ?? ADAMW_DEFAULTS.weightDecay,
		step: args.step
	};
	const bad = (what: string, value: number) => {
		throw new RangeError(`adamw: ${what}, got ${value}`);
	};
	if (!(h.lr >= 0 && Number.isFinite(h.lr))) bad('lr must be finite and >= 0', h.lr);
	if (!(h.beta1 >= 0 && h.beta1 < 1)) bad('beta1 must be in [0, 1)', h.beta1);
	if (!(h.beta2 >= 0 && h.beta2 < 1)) bad('beta2 must be in [0, 1)', h.beta2);
	if (!(h.eps >= 0 && Number.isFinite(h.eps))) bad('eps must be finite and >= 0', h.eps);
	if (!(h.weightDecay >= 0 && Number.isFinite(h.weightDecay)))
		bad('weightDecay must be finite and >= 0', h.weightDecay);
	if (!(Number.isInteger(h.step) && h.step >= 1)) bad('step must be an integer >= 1', h.step);
	return h;
}
