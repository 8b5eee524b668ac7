import { describe, expect, it } from 'vitest';
import { ShapeMismatchError } from '../../../src/lib/gpu/errors';
import { Recorder, run } from '../../../src/lib/gpu/kernel';
import { advancePositions, ropeAppend } from '../../../src/lib/gpu/kernels/kv-cache';
import { ropeForward, uploadRopeInvFreq } from '../../../src/lib/gpu/kernels/rope';
import { ropeRef } from '../../../src/lib/gpu/reference/rope';
import { kvCacheCases } from '../../../src/lib/gpu/selftest/kv-cache';
import { createTensor, readTensor, uploadTensor } from '../../../src/lib/gpu/tensor';
import { itRunsCases, useGpu } from '../../helpers/gpu';

describe('kv-cache', () => {
	const gpu = useGpu();
	itRunsCases(
		kvCacheCases([
			{ B: 1, S: 1, Hq: 1, Hkv: 1, D: 2, positions: [0] },
			{ B: 2, S: 5, Hq: 2, Hkv: 1, D: 12, positions: [4, 0], withT: true },
			// Slots past the cache (a finished sequence riding along) are skipped.
			{ B: 4, S: 7, Hq: 4, Hkv: 2, D: 8, positions: [6, 7, 100, 3] },
			// SmolLM2-135M's heads (9 over 3 kv heads of 64) for 33 sequences: more than one
			// workgroup
			{
				B: 33,
				S: 12,
				Hq: 9,
				Hkv: 3,
				D: 64,
				positions: Array.from({ length: 33 }, (_, b) => b % 12)
			}
		]),
		gpu
	);

	it('appending step after step with advance fills the slots in order', async () => {
		const g = gpu();
		const [B, S, W] = [2, 4, 4];
		const kCache = uploadTensor(g, new Float32Array(B * S * W), [B, S, 1, W], 'f32');
		const vCache = uploadTensor(g, new Float32Array(B * S * W), [B, S, 1, W], 'f32');
		const positions = uploadTensor(g, [1, 0], [B], 'u32');
		const invFreq = uploadRopeInvFreq(g, 10000, W);
		const q = createTensor(g, [B, 1, 1, W], 'f32');
		const k = createTensor(g, [B, 1, W], 'f32');
		const v = createTensor(g, [B, 1, W], 'f32');
		for (let step = 1; step <= 3; step++) {
			k.gpu.device.queue.writeBuffer(k.buffer, 0, new Float32Array(B * W).fill(step));
			v.gpu.device.queue.writeBuffer(v.buffer, 0, new Float32Array(B * W).fill(-step));
			await run(g, (rec) => {
				ropeAppend(rec, { q, k, v, kCache, vCache, positions, invFreq });
				advancePositions(rec, { positions });
			});
		}
		// Row 0 started at slot 1 (slot 0 untouched), row 1 at slot 0 (slot 3 untouched);
		// a key's last element x2 cos + x1 sin is never 0 for x1 = x2 > 0 at these angles.
		const slots = (a: Float32Array) => Array.from({ length: B * S }, (_, i) => a[i * W]);
		expect(slots(await readTensor(vCache))).toEqual([0, -1, -2, -3, -1, -2, -3, 0]);
		const kLast = await readTensor(kCache);
		const written = Array.from({ length: B * S }, (_, i) => kLast[i * W + W - 1] !== 0);
		expect(written).toEqual([false, true, true, true, true, true, true, false]);
		expect(Array.from(await readTensor(positions))).toEqual([4, 3]);
		for (const t of [kCache, vCache, positions, invFreq, q, k, v]) t.release();
	});

	it('rejects mismatched shapes and dtypes', () => {
		const g = gpu();
		const cache = createTensor(g, [2, 5, 2, 8], 'f32');
		const other = createTensor(g, [2, 6, 2, 8], 'f32');
		const rows = createTensor(g, [2, 2, 8], 'f32');
		const wrongRows = createTensor(g, [2, 1, 16], 'f32');
		const pos = createTensor(g, [2], 'u32');
		const posF = createTensor(g, [2], 'f32');
		const pos3 = createTensor(g, [3], 'u32');
		const invFreq = createTensor(g, [4], 'f32');
		const rec = new Recorder(g); // never submitted: every call must throw first
		const ok = { q: rows, k: rows, v: rows, kCache: cache, vCache: cache, positions: pos, invFreq };
		for (const bad of [
			{ ...ok, vCache: other },
			{ ...ok, k: wrongRows },
			{ ...ok, q: wrongRows },
			{ ...ok, positions: posF },
			{ ...ok, positions: pos3 },
			{ ...ok, kCache: rows },
			{ ...ok, invFreq: pos }
		])
			expect(() => ropeAppend(rec, bad)).toThrow(ShapeMismatchError);
		expect(() => advancePositions(rec, { positions: posF })).toThrow(ShapeMismatchError);
		ropeAppend(rec, ok);
		for (const t of [cache, other, rows, wrongRows, pos, posF, pos3, invFreq]) t.release();
	});

	it('rope append: q rotated in place, the rotated k and v in the caches at each position (past S skipped), k and v left as they were; bit for bit the rope kernel', async () => {
		const g = gpu();
		// GQA (4 query heads over 2 kv heads), a position past the cache, scaling as Qwen's
		const [B, S, Hq, Hkv, D, scaling] = [3, 5, 4, 2, 8, 1.25];
		const positions = [4, 0, 9];
		const rand = (n: number, seed: number) =>
			Float32Array.from({ length: n }, (_, i) => Math.sin(i * 12.9898 + seed) * 2);
		const [q0, k0, v0] = [rand(B * Hq * D, 1), rand(B * Hkv * D, 2), rand(B * Hkv * D, 3)];
		const sentinel = new Float32Array(B * S * Hkv * D).fill(7);
		const invFreq = uploadRopeInvFreq(g, 10000, D);
		const pos = uploadTensor(g, positions, [B], 'u32');
		const make = () => ({
			q: uploadTensor(g, q0, [B, 1, Hq, D], 'f32'),
			k: uploadTensor(g, k0, [B, 1, Hkv, D], 'f32'),
			v: uploadTensor(g, v0, [B, 1, Hkv, D], 'f32'),
			kCache: uploadTensor(g, sentinel, [B, S, Hkv, D], 'f32'),
			vCache: uploadTensor(g, sentinel, [B, S, Hkv, D], 'f32')
		});
		const fused = make();
		const apart = make();
		await run(g, (rec) => {
			ropeAppend(rec, { ...fused, positions: pos, invFreq, attentionScaling: scaling });
			ropeForward(rec, { x: apart.q, positions: pos, invFreq, attentionScaling: scaling });
			ropeForward(rec, { x: apart.k, positions: pos, invFreq, attentionScaling: scaling });
		});
		const read = async (t: typeof fused) =>
			Promise.all([t.q, t.k, t.v, t.kCache, t.vCache].map((x) => readTensor(x)));
		const [q, k, v, kCache, vCache] = await read(fused);
		// the CPU reference (f64, the angle rounded as transformers does)
		const shape = (heads: number) => ({ batch: B, seq: 1, heads, dim: D });
		const qRef = ropeRef(q0, positions, await readTensor(invFreq), shape(Hq), scaling);
		const kRef = ropeRef(k0, positions, await readTensor(invFreq), shape(Hkv), scaling);
		q.forEach((x, i) => expect(Math.abs(x - qRef[i])).toBeLessThan(2e-6));
		expect(Array.from(k)).toEqual(Array.from(k0));
		expect(Array.from(v)).toEqual(Array.from(v0));
		const W = Hkv * D;
		for (let b = 0; b < B; b++)
			for (let s = 0; s < S; s++)
				for (let j = 0; j < W; j++) {
					const at = (b * S + s) * W + j;
					const written = s === positions[b];
					expect(vCache[at]).toBe(written ? v0[b * W + j] : 7);
					if (written) expect(Math.abs(kCache[at] - kRef[b * W + j])).toBeLessThan(2e-6);
					else expect(kCache[at]).toBe(7);
				}
		// the same bits as the rope kernel on q and on k
		const [qA, kA] = await read(apart);
		expect(Array.from(q)).toEqual(Array.from(qA));
		positions.forEach((slot, b) => {
			if (slot >= S) return;
			const row = kCache.subarray((b * S + slot) * W, (b * S + slot + 1) * W);
			expect(Array.from(row)).toEqual(Array.from(kA.subarray(b * W, (b + 1) * W)));
		});
		// bad shapes are refused before anything is recorded
		const rec = new Recorder(g);
		const args = { ...fused, positions: pos, invFreq };
		for (const bad of [
			{ ...args, q: fused.k.view([B, Hkv * D]) },
			{ ...args, q: fused.kCache },
			{ ...args, invFreq: pos },
			{ ...args, v: fused.q }
		])
			expect(() => ropeAppend(rec, bad)).toThrow(ShapeMismatchError);
		for (const t of [...Object.values(fused), ...Object.values(apart), invFreq, pos]) t.release();
	});
});
