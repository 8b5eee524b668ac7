/**
 * @file The prefill's attention of prompt suffixes over cached prefixes, two kernels on the
 * same work: `extend` (extendAttention: a block of a sequence's rows a workgroup) and
 * `indexed` (decodeAttention with `sequences`: one row a workgroup, as the engine did
 * before). SEQS sequences each with a prefix of PREFIX cached tokens and ROWS new rows (a
 * game's next turn), the bundled model's heads (4 of 64) unless --shape; wall ms of one
 * dispatch each (median, min, max of REPS after a warm-up) and the two outputs' largest
 * difference. One JSON object.
 *
 *   npx tsx tools/bench/bench-extend-attention.ts [--seqs 512] [--prefix 200] [--rows 40]
 *       [--heads 4] [--kv-heads 4] [--head-dim 64] [--reps 5]
 */
import { acquireGpu } from '../../src/lib/gpu/device';
import { run } from '../../src/lib/gpu/kernel';
import { decodeAttention } from '../../src/lib/gpu/kernels/decode-attention';
import { extendAttention, extendBlocks } from '../../src/lib/gpu/kernels/extend-attention';
import { createTensor, readTensor, uploadTensor } from '../../src/lib/gpu/tensor';
import { Rng } from '../../src/lib/util/random';
import { makeLog, printJson, runMain } from '../tool-entry';
import { benchHeader, option, timeCalls } from './bench-support';

const log = makeLog('bench-extend-attention');
const int = (name: string, fallback: number) => Number(option(name) ?? fallback);

async function main() {
	const [SEQS, PREFIX, ROWS] = [int('seqs', 512), int('prefix', 200), int('rows', 40)];
	const [Hq, Hkv, D, REPS] = [
		int('heads', 4),
		int('kv-heads', 4),
		int('head-dim', 64),
		int('reps', 5)
	];
	const S = Math.ceil((PREFIX + ROWS) / 256) * 256;
	const R = SEQS * ROWS;
	const gpu = await acquireGpu();
	const rng = new Rng(1);
	const positions = Array.from({ length: R }, (_, r) => PREFIX + (r % ROWS));
	const sequences = Array.from({ length: R }, (_, r) => Math.floor(r / ROWS));
	const runs = Array.from({ length: SEQS }, (_, b) => ({ first: b * ROWS, rows: ROWS }));
	const blockData = extendBlocks(runs, D, Hq / Hkv);
	const t = {
		q: uploadTensor(gpu, rng.normals(R * Hq * D), [R, Hq, D], 'f32'),
		k: uploadTensor(gpu, rng.normals(SEQS * S * Hkv * D), [SEQS, S, Hkv, D], 'f32'),
		v: uploadTensor(gpu, rng.normals(SEQS * S * Hkv * D), [SEQS, S, Hkv, D], 'f32'),
		positions: uploadTensor(gpu, positions, [R], 'u32'),
		sequences: uploadTensor(gpu, sequences, [R], 'u32'),
		blocks: uploadTensor(gpu, blockData, [blockData.length / 2, 2], 'u32')
	};
	const outs = {
		extend: createTensor(gpu, [R, Hq, D], 'f32'),
		indexed: createTensor(gpu, [R, Hq, D], 'f32')
	};
	const calls = {
		extend: () => run(gpu, (rec) => extendAttention(rec, { ...t, out: outs.extend })),
		indexed: () => run(gpu, (rec) => decodeAttention(rec, { ...t, out: outs.indexed }))
	};
	const times: Record<string, unknown> = {};
	for (const [name, call] of Object.entries(calls)) {
		times[name] = await timeCalls(REPS, 1, call);
		log(name, JSON.stringify(times[name]));
	}
	const [a, b] = [await readTensor(outs.extend), await readTensor(outs.indexed)];
	let maxDiff = 0;
	for (let i = 0; i < a.length; i++) maxDiff = Math.max(maxDiff, Math.abs(a[i] - b[i]));
	const ms = (name: string) => (times[name] as { medianMs: number }).medianMs;
	printJson({
		...benchHeader('extend attention: blocks of a sequence rows vs one row a workgroup', gpu),
		work: {
			sequences: SEQS,
			prefix: PREFIX,
			rows: ROWS,
			Hq,
			Hkv,
			D,
			cacheSlots: S,
			blocks: blockData.length / 2
		},
		...times,
		speedup: ms('indexed') / ms('extend'),
		maxAbsDiff: maxDiff
	});
	gpu.destroy();
}

runMain(main);
