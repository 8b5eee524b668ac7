/**
 * @file Decode attention checked against its f64 CPU reference.
 * Tolerance: 2e-5 absolute + 1e-4 relative, as the prefill attention's (selftest/
 * attention.ts): f32 accumulation in another order (an online softmax over key tiles,
 * then a merge of the splits), unit-normal inputs, scores of order 1; a missed mask, a
 * wrong kv head or a split merged twice is off by > 1e-2.
 */
import type { Gpu } from '../device';
import { run } from '../kernel';
import { decodeAttention } from '../kernels/decode-attention';
import { decodeAttentionRef, type DecodeAttentionDims } from '../reference/decode-attention';
import { Rng } from '../../util/random';
import { createTensor, readTensor, uploadTensor, type Tensor } from '../tensor';
import type { Comparison, KernelCase } from './types';

const TOL = { atol: 2e-5, rtol: 1e-4 };

export interface DecodeAttentionCaseSpec extends DecodeAttentionDims {
	/** Each query's position (keys 0..position); >= S is capped at S - 1. */
	positions: number[];
	/** Each query's cache row (the indexed variant; as many as positions); absent: row b. */
	sequences?: number[];
	/** Key splits (default: the wrapper's choice). */
	splits?: number;
	scale?: number;
}

export function decodeAttentionCases(specs: DecodeAttentionCaseSpec[]): KernelCase[] {
	return specs.map((s) => ({
		family: 'decode-attention',
		name:
			`B=${s.B} S=${s.S} Hq=${s.Hq} Hkv=${s.Hkv} D=${s.D} positions=[${s.positions}]` +
			(s.sequences ? ` sequences=[${s.sequences}]` : '') +
			(s.splits ? ` splits=${s.splits}` : '') +
			(s.scale !== undefined ? ` scale=${s.scale}` : ''),
		run: (gpu: Gpu) => runCase(gpu, s)
	}));
}

async function runCase(gpu: Gpu, s: DecodeAttentionCaseSpec): Promise<Comparison[]> {
	const { B, S, Hq, Hkv, D } = s;
	const R = s.sequences?.length ?? B;
	const rng = new Rng(B * 1009 + S * 101 + Hq * 13 + Hkv * 7 + D);
	// The whole cache is random: slots past a position must be masked, not zero.
	const qh = rng.normals(R * Hq * D);
	const kh = rng.normals(B * S * Hkv * D);
	const vh = rng.normals(B * S * Hkv * D);
	const owned: Tensor[] = [];
	const keep = <T extends Tensor>(t: T) => (owned.push(t), t);
	try {
		const q = keep(uploadTensor(gpu, qh, [R, Hq, D], 'f32'));
		const k = keep(uploadTensor(gpu, kh, [B, S, Hkv, D], 'f32'));
		const v = keep(uploadTensor(gpu, vh, [B, S, Hkv, D], 'f32'));
		const positions = keep(uploadTensor(gpu, s.positions, [R], 'u32'));
		const sequences = s.sequences && keep(uploadTensor(gpu, s.sequences, [R], 'u32'));
		const out = keep(createTensor(gpu, [R, Hq, D], 'f32'));
		await run(gpu, (rec) =>
			decodeAttention(rec, {
				q,
				k,
				v,
				positions,
				sequences,
				out,
				splits: s.splits,
				scale: s.scale
			})
		);
		return [
			{
				label: 'out',
				actual: await readTensor(out),
				expected: decodeAttentionRef(qh, kh, vh, s.positions, s, s.scale, s.sequences),
				...TOL
			}
		];
	} finally {
		for (const t of owned) t.release();
	}
}

/** The self-test's sizes: SmolLM2-135M's heads (9 over 3 kv heads of 64) at uneven
 * positions over several splits, and a head of 128 (two columns per invocation). */
export const DECODE_ATTENTION_SELFTEST = decodeAttentionCases([
	{ B: 3, S: 200, Hq: 9, Hkv: 3, D: 64, positions: [0, 70, 199] },
	{ B: 2, S: 70, Hq: 4, Hkv: 1, D: 128, positions: [65, 3], splits: 2 }
]);
