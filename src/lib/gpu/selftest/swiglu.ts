/**
 * @file SwiGLU checked against its f64 CPU reference, separate and fused layouts, with gate
 * values up to ±100 among unit-normal ones. Tolerance 1e-6 absolute + 1e-5 relative: a few
 * f32 operations plus WGSL's exp (<= 3 + 2|x| ulp); beyond |g| 14 silu is under the
 * absolute term, and dgate near silu's minimum cancels to a few 1e-7.
 */
import type { Gpu } from '../device';
import { run } from '../kernel';
import { swigluBackward, swigluForward } from '../kernels/swiglu';
import { Rng } from '../../util/random';
import { joinGateUp, swigluBackwardRef, swigluRef } from '../reference/swiglu';
import { createTensor, readTensor, uploadTensor, type Tensor } from '../tensor';
import type { Comparison, KernelCase } from './types';

const TOL = { atol: 1e-6, rtol: 1e-5 };

/** Gate values where silu's numerics are at risk; put first in every case. */
export const EXTREME_GATES = [-100, 100, -30, 30, -15, 15, 0, -1.278];

export interface SwigluCaseSpec {
	rows: number;
	inter: number;
	layout: 'separate' | 'fused';
}

export function swigluCases(specs: SwigluCaseSpec[]): KernelCase[] {
	return specs.map((spec) => ({
		family: 'swiglu',
		name: `forward+backward ${spec.layout} N=${spec.rows} I=${spec.inter}`,
		run: (gpu: Gpu) => runCase(gpu, spec)
	}));
}

async function runCase(gpu: Gpu, { rows, inter, layout }: SwigluCaseSpec): Promise<Comparison[]> {
	const n = rows * inter;
	const rng = new Rng(rows * 7907 + inter * 31 + layout.length);
	const gate = rng.normals(n, 3);
	gate.set(EXTREME_GATES.slice(0, n));
	const up = rng.normals(n);
	const dhHost = rng.normals(n);
	const fused = layout === 'fused';
	const owned: Tensor[] = [];
	const tensor = (data: ArrayLike<number> | null, shape: number[]) => {
		const t = data ? uploadTensor(gpu, data, shape, 'f32') : createTensor(gpu, shape, 'f32');
		owned.push(t);
		return t;
	};
	try {
		const h = tensor(null, [rows, inter]);
		const dh = tensor(dhHost, [rows, inter]);
		const ref = swigluRef(gate, up);
		const grads = swigluBackwardRef(gate, up, dhHost);
		if (fused) {
			const gateUp = tensor(joinGateUp(gate, up, inter), [rows, 2 * inter]);
			const dgateUp = tensor(null, [rows, 2 * inter]);
			await run(gpu, (rec) => {
				swigluForward(rec, { gateUp, h });
				swigluBackward(rec, { input: { gateUp }, dh, grads: { dgateUp } });
			});
			return [
				{ label: 'h', actual: await readTensor(h), expected: ref, ...TOL },
				{
					label: 'dgate_up',
					actual: await readTensor(dgateUp),
					expected: joinGateUp(grads.dgate, grads.dup, inter),
					...TOL
				}
			];
		}
		const g = tensor(gate, [rows, inter]);
		const u = tensor(up, [rows, inter]);
		const dgate = tensor(null, [rows, inter]);
		const dup = tensor(null, [rows, inter]);
		await run(gpu, (rec) => {
			swigluForward(rec, { gate: g, up: u, h });
			swigluBackward(rec, { input: { gate: g, up: u }, dh, grads: { dgate, dup } });
		});
		return [
			{ label: 'h', actual: await readTensor(h), expected: ref, ...TOL },
			{ label: 'dgate', actual: await readTensor(dgate), expected: grads.dgate, ...TOL },
			{ label: 'dup', actual: await readTensor(dup), expected: grads.dup, ...TOL }
		];
	} finally {
		for (const t of owned) t.release();
	}
}

/** The self-test's sizes: not a multiple of 256, both layouts. */
export const SWIGLU_SELFTEST = swigluCases([
	{ rows: 3, inter: 37, layout: 'separate' },
	{ rows: 5, inter: 96, layout: 'fused' }
]);
