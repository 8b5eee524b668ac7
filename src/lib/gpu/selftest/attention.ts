/**
 * @file Attention (forward and backward) checked against its f64 CPU reference.
 * Tolerance 2e-5 absolute + 1e-4 relative: f32 sums in another order (online softmax,
 * head-dim chunks, dk/dv over a group) give ~1e-6; a dropped mask term or wrong head is
 * off by > 1e-2. Cases may pin a tiling (tuning) to reach tile edges.
 */
import type { Gpu } from '../device';
import { run } from '../kernel';
import {
	attentionBackwardTuned,
	attentionForwardTuned,
	type AttentionTuning
} from '../kernels/attention';
import {
	attentionBackwardRef,
	attentionRef,
	type AttentionDims,
	type AttentionOptions
} from '../reference/attention';
import { Rng } from '../../util/random';
import { createTensor, readTensor, uploadTensor, type Tensor } from '../tensor';
import type { KernelCase } from './types';

const TOL = { atol: 2e-5, rtol: 1e-4 };

export interface AttentionCaseShape extends Omit<AttentionDims, 'Tk'>, AttentionOptions {
	/** Keys per sequence; defaults to qOffset + T. */
	Tk?: number;
	/** One per batch row; defaults to Tk for each. */
	lengths?: number[];
	/** Tilings or a workgroup-memory budget other than the device's default choice. */
	tuning?: AttentionTuning;
}

function describe(s: AttentionCaseShape, Tk: number, lengths: number[]): string {
	const extra = [
		s.qOffset ? `qOffset=${s.qOffset}` : '',
		s.scale !== undefined ? `scale=${s.scale}` : '',
		s.tuning?.workgroupBytes ? `workgroupBytes=${s.tuning.workgroupBytes}` : '',
		...Object.entries(s.tuning?.tiles ?? {}).map(
			([stage, t]) => `${stage}=${t.rt}x${t.ct}/k${t.bk}/v${t.bv}${t.tr ? `/r${t.tr}` : ''}`
		)
	].filter(Boolean);
	return (
		`B=${s.B} T=${s.T} Tk=${Tk} Hq=${s.Hq} Hkv=${s.Hkv} D=${s.D} ` +
		`lengths=[${lengths}]${extra.length ? ' ' + extra.join(' ') : ''}`
	);
}

export function attentionCases(shapes: AttentionCaseShape[]): KernelCase[] {
	return shapes.map((s) => {
		const qOffset = s.qOffset ?? 0;
		const Tk = s.Tk ?? qOffset + s.T;
		const lengths = s.lengths ?? Array.from({ length: s.B }, () => Tk);
		const dims: AttentionDims = { B: s.B, T: s.T, Tk, Hq: s.Hq, Hkv: s.Hkv, D: s.D };
		const options: AttentionOptions = { scale: s.scale, qOffset };
		return {
			family: 'attention',
			name: `forward+backward ${describe(s, Tk, lengths)}`,
			async run(gpu: Gpu) {
				const rng = new Rng(s.B * 1009 + s.T * 101 + s.Hq * 13 + s.Hkv * 7 + s.D + qOffset);
				const qShape = [s.B, s.T, s.Hq, s.D];
				const kShape = [s.B, Tk, s.Hkv, s.D];
				const n = (shape: number[]) => shape.reduce((a, b) => a * b, 1);
				const qh = rng.normals(n(qShape));
				const kh = rng.normals(n(kShape));
				const vh = rng.normals(n(kShape));
				const douth = rng.normals(n(qShape));
				const owned: Tensor[] = [];
				const own = <T extends Tensor>(t: T) => (owned.push(t), t);
				try {
					const q = own(uploadTensor(gpu, qh, qShape, 'f32'));
					const k = own(uploadTensor(gpu, kh, kShape, 'f32'));
					const v = own(uploadTensor(gpu, vh, kShape, 'f32'));
					const dout = own(uploadTensor(gpu, douth, qShape, 'f32'));
					const len = own(uploadTensor(gpu, lengths, [s.B], 'u32'));
					const out = own(createTensor(gpu, qShape, 'f32'));
					const lse = own(createTensor(gpu, [s.B, s.Hq, s.T], 'f32'));
					const dq = own(createTensor(gpu, qShape, 'f32'));
					const dk = own(createTensor(gpu, kShape, 'f32'));
					const dv = own(createTensor(gpu, kShape, 'f32'));
					await run(gpu, (rec) => {
						const common = { q, k, v, lengths: len, ...options };
						const tuning = s.tuning ?? {};
						attentionForwardTuned(rec, { ...common, out, lse }, tuning);
						attentionBackwardTuned(rec, { ...common, out, lse, dout, dq, dk, dv }, tuning);
					});
					const fwd = attentionRef(qh, kh, vh, lengths, dims, options);
					const bwd = attentionBackwardRef(qh, kh, vh, douth, lengths, dims, options);
					const cmp = async (label: string, t: Tensor, expected: Float64Array) => ({
						label,
						actual: await readTensor(t),
						expected,
						...TOL
					});
					return [
						await cmp('out', out, fwd.out),
						await cmp('lse', lse, fwd.lse),
						await cmp('dq', dq, bwd.dq),
						await cmp('dk', dk, bwd.dk),
						await cmp('dv', dv, bwd.dv)
					];
				} finally {
					for (const t of owned) t.release();
				}
			}
		};
	});
}

/** The in-browser self-test: GQA with padding and a tile remainder, and a decode step. */
export const ATTENTION_SELFTEST = attentionCases([
	{ B: 2, T: 37, Hq: 4, Hkv: 2, D: 16, lengths: [37, 20] },
	{ B: 2, T: 1, Hq: 3, Hkv: 1, D: 8, qOffset: 9, lengths: [10, 6] }
]);
