/**
 * @file Extend attention checked against decode attention's f64 CPU reference (the same
 * function of q, the caches, positions and cache rows). Tolerance: 2e-5 absolute + 1e-4
 * relative, as decode attention's: f32 accumulation in another order, unit-normal inputs; a
 * row scored against another row's mask, a block's rows past its first block or a wrong kv
 * head is off by > 1e-2.
 */
import type { Gpu } from '../device';
import { run } from '../kernel';
import { extendAttention, extendBlocks, type RowRun } from '../kernels/extend-attention';
import { decodeAttentionRef, type DecodeAttentionDims } from '../reference/decode-attention';
import { Rng } from '../../util/random';
import { createTensor, readTensor, uploadTensor, type Tensor } from '../tensor';
import type { Comparison, KernelCase } from './types';

const TOL = { atol: 2e-5, rtol: 1e-4 };

export interface ExtendAttentionCaseSpec extends DecodeAttentionDims {
	/** Runs of consecutive rows, each a suffix of cache row `sequence` from position `start`. */
	suffixes: { sequence: number; start: number; rows: number }[];
	scale?: number;
}

export function extendAttentionCases(specs: ExtendAttentionCaseSpec[]): KernelCase[] {
	return specs.map((s) => ({
		family: 'extend-attention',
		name:
			`B=${s.B} S=${s.S} Hq=${s.Hq} Hkv=${s.Hkv} D=${s.D} suffixes=` +
			s.suffixes.map((x) => `${x.sequence}@${x.start}+${x.rows}`).join(',') +
			(s.scale !== undefined ? ` scale=${s.scale}` : ''),
		run: (gpu: Gpu) => runCase(gpu, s)
	}));
}

async function runCase(gpu: Gpu, s: ExtendAttentionCaseSpec): Promise<Comparison[]> {
	const { B, S, Hq, Hkv, D } = s;
	const positions: number[] = [];
	const sequences: number[] = [];
	const runs: RowRun[] = [];
	for (const x of s.suffixes) {
		runs.push({ first: positions.length, rows: x.rows });
		for (let i = 0; i < x.rows; i++) {
			positions.push(x.start + i);
			sequences.push(x.sequence);
		}
	}
	const R = positions.length;
	const rng = new Rng(R * 1009 + S * 101 + Hq * 13 + Hkv * 7 + D);
	// The whole cache is random: slots past a row's position must be masked, not zero.
	const qh = rng.normals(R * Hq * D);
	const kh = rng.normals(B * S * Hkv * D);
	const vh = rng.normals(B * S * Hkv * D);
	const owned: Tensor[] = [];
	const keep = <T extends Tensor>(t: T) => (owned.push(t), t);
	try {
		const blockData = extendBlocks(runs, D, Hq / Hkv);
		const args = {
			q: keep(uploadTensor(gpu, qh, [R, Hq, D], 'f32')),
			k: keep(uploadTensor(gpu, kh, [B, S, Hkv, D], 'f32')),
			v: keep(uploadTensor(gpu, vh, [B, S, Hkv, D], 'f32')),
			positions: keep(uploadTensor(gpu, positions, [R], 'u32')),
			sequences: keep(uploadTensor(gpu, sequences, [R], 'u32')),
			blocks: keep(uploadTensor(gpu, blockData, [blockData.length / 2, 2], 'u32')),
			out: keep(createTensor(gpu, [R, Hq, D], 'f32')),
			scale: s.scale
		};
		await run(gpu, (rec) => extendAttention(rec, args));
		return [
			{
				label: 'out',
				actual: await readTensor(args.out),
				expected: decodeAttentionRef(qh, kh, vh, positions, s, s.scale, sequences),
				...TOL
			}
		];
	} finally {
		for (const t of owned) t.release();
	}
}

/** The self-test's size: SmolLM2-135M's heads (9 over 3 kv heads of 64), a suffix of 7 rows
 * (three blocks of 3, 3 and 1) past a tile of keys, and one of a single row. */
export const EXTEND_ATTENTION_SELFTEST = extendAttentionCases([
	{
		B: 2,
		S: 100,
		Hq: 9,
		Hkv: 3,
		D: 64,
		suffixes: [
			{ sequence: 1, start: 60, rows: 7 },
			{ sequence: 0, start: 4, rows: 1 }
		]
	}
]);
