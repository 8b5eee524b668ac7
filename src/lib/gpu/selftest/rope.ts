/**
 * @file RoPE checked against its CPU reference (f64 rotation of the same f32 angle),
 * forward and backward, in place and not. Tolerance 1e-6 absolute + 1e-5 relative: sin/cos
 * within ~1.1e-7 below 1.6e6 rad and two more roundings; large positions need nothing
 * looser, both sides rotating by the same f32 angle (as transformers rounds it).
 */
import type { Gpu } from '../device';
import { run } from '../kernel';
import { ropeBackward, ropeForward, ropeInvFreq } from '../kernels/rope';
import { Rng } from '../../util/random';
import { ropeRef } from '../reference/rope';
import { createTensor, readTensor, uploadTensor, type Tensor } from '../tensor';
import type { Comparison, KernelCase } from './types';

const TOL = { atol: 1e-6, rtol: 1e-5 };

export interface RopeCaseSpec {
	batch: number;
	seq: number;
	heads: number;
	dim: number;
	/** 'steps': 0..T-1 shared by the batch ([T]); 'padded': per token, each row left-padded
	 * by a different amount, then 0, 1, ...; 'offset': a KV-cache step, 1000 + t per token;
	 * 'large': per token, random below 32768 with 30000, 30001, 32767 and 131071 among them. */
	positions: 'steps' | 'padded' | 'offset' | 'large';
	inPlace?: boolean;
	theta?: number;
	attentionScaling?: number;
	/** Rank-3 x [T, H, D] (batch must be 1). */
	rank3?: boolean;
}

export function ropePositions(spec: RopeCaseSpec, rng: Rng): Uint32Array {
	const { batch, seq } = spec;
	if (spec.positions === 'steps') return Uint32Array.from({ length: seq }, (_, t) => t);
	const out = new Uint32Array(batch * seq);
	for (let b = 0; b < batch; b++) {
		const pad = rng.int(Math.max(1, seq));
		for (let t = 0; t < seq; t++) {
			const i = b * seq + t;
			if (spec.positions === 'padded') out[i] = Math.max(0, t - pad);
			else if (spec.positions === 'offset') out[i] = 1000 + t;
			else out[i] = rng.int(32768);
		}
	}
	if (spec.positions === 'large') out.set([30000, 30001, 32767, 131071].slice(0, out.length));
	return out;
}

export function ropeCases(specs: RopeCaseSpec[]): KernelCase[] {
	return specs.map((spec) => ({
		family: 'rope',
		name:
			`forward+backward ${spec.rank3 ? '' : `B=${spec.batch} `}T=${spec.seq} H=${spec.heads} ` +
			`D=${spec.dim} positions=${spec.positions}${spec.inPlace ? ' in place' : ''}` +
			(spec.attentionScaling ? ` scaling=${spec.attentionScaling}` : ''),
		run: (gpu: Gpu) => runCase(gpu, spec)
	}));
}

async function runCase(gpu: Gpu, spec: RopeCaseSpec): Promise<Comparison[]> {
	const { batch, seq, heads, dim } = spec;
	const theta = spec.theta ?? 10000;
	const scaling = spec.attentionScaling ?? 1;
	const rng = new Rng(batch * 131 + seq * 17 + heads * 7 + dim + spec.positions.length);
	const n = batch * seq * heads * dim;
	const shape = spec.rank3 ? [seq, heads, dim] : [batch, seq, heads, dim];
	const xh = rng.normals(n);
	const dyh = rng.normals(n);
	const posh = ropePositions(spec, rng);
	const freqs = ropeInvFreq(theta, dim);
	const owned: Tensor[] = [];
	const keep = <T extends Tensor>(t: T) => (owned.push(t), t);
	try {
		const x = keep(uploadTensor(gpu, xh, shape, 'f32'));
		const dy = keep(uploadTensor(gpu, dyh, shape, 'f32'));
		const positions = keep(uploadTensor(gpu, posh, [posh.length], 'u32'));
		const invFreq = keep(uploadTensor(gpu, freqs, [dim / 2], 'f32'));
		const y = spec.inPlace ? x : keep(createTensor(gpu, shape, 'f32'));
		const dx = spec.inPlace ? dy : keep(createTensor(gpu, shape, 'f32'));
		const common = { positions, invFreq, attentionScaling: spec.attentionScaling };
		await run(gpu, (rec) => {
			ropeForward(rec, { x, y, ...common });
			ropeBackward(rec, { x: dy, y: dx, ...common });
		});
		const dims = { batch, seq, heads, dim };
		return [
			{
				label: 'y',
				actual: await readTensor(y),
				expected: ropeRef(xh, posh, freqs, dims, scaling, 1),
				...TOL
			},
			{
				label: 'dx',
				actual: await readTensor(dx),
				expected: ropeRef(dyh, posh, freqs, dims, scaling, -1),
				...TOL
			}
		];
	} finally {
		for (const t of owned) t.release();
	}
}

/** The self-test's sizes: Qwen2.5-0.5B's head (D=64, theta 1e6) with per-token padded
 * positions, and D=128 at large positions, in place. */
export const ROPE_SELFTEST = ropeCases([
	{ batch: 2, seq: 5, heads: 3, dim: 64, positions: 'padded', theta: 1e6 },
	{ batch: 1, seq: 7, heads: 2, dim: 128, positions: 'large', inPlace: true }
]);
