/**
 * @file AdamW with global-norm clipping checked against its f64 CPU reference over three
 * steps on several tensors. Tolerance 1e-6 absolute + 1e-5 relative: a few f32 roundings
 * per element, an f32 norm over ~10^5 squares, and an update bounded by ~lr.
 */
import type { Gpu } from '../device';
import { Recorder } from '../kernel';
import { adamwStep, GRAD_NORM_STATS, readGradNormStats, type AdamWSlot } from '../kernels/adamw';
import { adamwStepRef, type AdamWRefState } from '../reference/adamw';
import { Rng } from '../../util/random';
import { createTensor, readTensor, uploadTensor, writeTensor } from '../tensor';
import type { Comparison, KernelCase } from './types';

const TOL = { atol: 1e-6, rtol: 1e-5 };

export interface AdamWCaseSpec {
	/** Element counts of the parameter tensors. */
	sizes: number[];
	/** 'clip': maxNorm at half the first step's norm; 'loose': maxNorm far above; 'off'. */
	clip: 'clip' | 'loose' | 'off';
	/** Poison one gradient element at step 2 (of 3) with NaN or Inf. */
	poison?: 'nan' | 'inf';
	weightDecay?: number;
}

const STEPS = 3;

export function adamwCases(specs: AdamWCaseSpec[]): KernelCase[] {
	return specs.map((spec) => ({
		family: 'adamw',
		name:
			`${STEPS} steps sizes=[${spec.sizes}] clip=${spec.clip}` +
			(spec.poison ? ` ${spec.poison} grad at step 2` : ''),
		run: (gpu: Gpu) => runCase(gpu, spec)
	}));
}

async function runCase(gpu: Gpu, spec: AdamWCaseSpec): Promise<Comparison[]> {
	const rng = new Rng(spec.sizes.reduce((a, n) => a * 31 + n, 17) + spec.clip.length);
	const init = spec.sizes.map((n) => rng.normals(n, 0.5));
	const gradsPerStep = Array.from({ length: STEPS }, () => spec.sizes.map((n) => rng.normals(n)));
	if (spec.poison) {
		const t = spec.sizes.length - 1;
		gradsPerStep[1][t][rng.int(spec.sizes[t])] = spec.poison === 'nan' ? NaN : Infinity;
	}
	const firstNorm = Math.sqrt(
		gradsPerStep[0].reduce((s, g) => s + g.reduce((a, x) => a + x * x, 0), 0)
	);
	const maxNorm =
		spec.clip === 'clip' ? firstNorm / 2 : spec.clip === 'loose' ? firstNorm * 100 : undefined;
	const hyper = {
		lr: 1e-2,
		beta1: 0.9,
		beta2: 0.999,
		eps: 1e-8,
		weightDecay: spec.weightDecay ?? 0.1
	};

	const slots: AdamWSlot[] = spec.sizes.map((n, i) => ({
		param: uploadTensor(gpu, init[i], [n], 'f32'),
		grad: createTensor(gpu, [n], 'f32'),
		m: createTensor(gpu, [n], 'f32'),
		v: createTensor(gpu, [n], 'f32')
	}));
	const stats = createTensor(gpu, [GRAD_NORM_STATS.length], 'f32');
	const ref: AdamWRefState = {
		params: init.map((p) => Float64Array.from(p)),
		m: spec.sizes.map((n) => new Float64Array(n)),
		v: spec.sizes.map((n) => new Float64Array(n))
	};
	try {
		const actualStats: number[] = [];
		const expectedStats: number[] = [];
		// The caller's step count t advances only when a step was not skipped (read from
		// the stats, as a training loop does), so after a skip both sides reuse the same t.
		let t = 1;
		const unchanged: Comparison[] = [];
		for (const [k, grads] of gradsPerStep.entries()) {
			slots.forEach((s, i) => writeTensor(s.grad, grads[i]));
			const poisoned = spec.poison !== undefined && k === 1;
			const before = poisoned ? await readState(slots) : [];
			const rec = new Recorder(gpu);
			adamwStep(rec, { slots, stats, ...hyper, step: t, maxNorm });
			await rec.submit();
			if (poisoned) {
				const after = await readState(slots);
				before.forEach((b, i) =>
					unchanged.push({
						label: `unchanged by the ${spec.poison} step [${i}]`,
						actual: after[i],
						expected: b,
						atol: 0,
						rtol: 0
					})
				);
			}
			const got = await readGradNormStats(stats);
			const want = adamwStepRef(ref, grads, { ...hyper, step: t, maxNorm });
			actualStats.push(got.norm, got.scale, got.skipped ? 1 : 0);
			expectedStats.push(want.norm, want.scale, want.skipped ? 1 : 0);
			if (!got.skipped) t++;
		}
		const out: Comparison[] = [
			...unchanged,
			{
				label: 'stats [norm, scale, skipped] per step',
				actual: actualStats,
				expected: expectedStats,
				...TOL
			}
		];
		for (const [i, s] of slots.entries()) {
			out.push({
				label: `param[${i}]`,
				actual: await readTensor(s.param),
				expected: ref.params[i],
				...TOL
			});
			out.push({ label: `m[${i}]`, actual: await readTensor(s.m), expected: ref.m[i], ...TOL });
			out.push({ label: `v[${i}]`, actual: await readTensor(s.v), expected: ref.v[i], ...TOL });
		}
		return out;
	} finally {
		for (const s of slots) for (const t of [s.param, s.grad, s.m, s.v]) t.release();
		stats.release();
	}
}

/** param, m, v of every slot, flattened, as they are on the GPU now. */
async function readState(slots: AdamWSlot[]): Promise<Float32Array[]> {
	const out: Float32Array[] = [];
	for (const s of slots)
		for (const t of [s.param, s.m, s.v]) out.push(Float32Array.from(await readTensor(t)));
	return out;
}

/** The in-browser default: three tensors of odd sizes, clipping on; and a NaN step. */
export const ADAMW_SELFTEST = adamwCases([
	{ sizes: [1, 37, 300], clip: 'clip' },
	{ sizes: [5, 64], clip: 'loose', poison: 'nan' }
]);
