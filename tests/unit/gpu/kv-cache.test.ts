import { describe, expect, it } from 'vitest';
import { ShapeMismatchError } from '../../../src/lib/gpu/errors';
import { Recorder, run } from '../../../src/lib/gpu/kernel';
import { advancePositions, kvCacheAppend } from '../../../src/lib/gpu/kernels/kv-cache';
import { kvCacheCases } from '../../../src/lib/gpu/selftest/kv-cache';
import { createTensor, readTensor, uploadTensor } from '../../../src/lib/gpu/tensor';
import { itRunsCases, useGpu } from '../../helpers/gpu';

describe('kv-cache', () => {
	const gpu = useGpu();
	itRunsCases(
		kvCacheCases([
			{ B: 1, S: 1, Hkv: 1, D: 1, positions: [0] },
			{ B: 2, S: 5, Hkv: 1, D: 12, positions: [4, 0], withT: true },
			// Slots past the cache (a finished sequence riding along) are skipped.
			{ B: 4, S: 7, Hkv: 2, D: 8, positions: [6, 7, 100, 3] },
			// SmolLM2-135M's kv rows (3 x 64) for 33 sequences: more than one workgroup.
			{ B: 33, S: 12, Hkv: 3, D: 64, positions: Array.from({ length: 33 }, (_, b) => b % 12) }
		]),
		gpu
	);

	it('appending step after step with advance fills the slots in order', async () => {
		const g = gpu();
		const [B, S, W] = [2, 4, 3];
		const kCache = uploadTensor(g, new Float32Array(B * S * W), [B, S, 1, W], 'f32');
		const vCache = uploadTensor(g, new Float32Array(B * S * W), [B, S, 1, W], 'f32');
		const positions = uploadTensor(g, [1, 0], [B], 'u32');
		const k = createTensor(g, [B, 1, W], 'f32');
		const v = createTensor(g, [B, 1, W], 'f32');
		for (let step = 1; step <= 3; step++) {
			k.gpu.device.queue.writeBuffer(k.buffer, 0, new Float32Array(B * W).fill(step));
			v.gpu.device.queue.writeBuffer(v.buffer, 0, new Float32Array(B * W).fill(-step));
			await run(g, (rec) => {
				kvCacheAppend(rec, { k, v, kCache, vCache, positions });
				advancePositions(rec, { positions });
			});
		}
		// Row 0 started at slot 1 (slot 0 untouched), row 1 at slot 0 (slot 3 untouched).
		const slots = (a: Float32Array) => Array.from({ length: B * S }, (_, i) => a[i * W]);
		expect(slots(await readTensor(kCache))).toEqual([0, 1, 2, 3, 1, 2, 3, 0]);
		expect(slots(await readTensor(vCache))).toEqual([0, -1, -2, -3, -1, -2, -3, 0]);
		expect(Array.from(await readTensor(positions))).toEqual([4, 3]);
		for (const t of [kCache, vCache, positions, k, v]) t.release();
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
		const rec = new Recorder(g); // never submitted: every call must throw first
		const ok = { k: rows, v: rows, kCache: cache, vCache: cache, positions: pos };
		for (const bad of [
			{ ...ok, vCache: other },
			{ ...ok, k: wrongRows },
			{ ...ok, positions: posF },
			{ ...ok, positions: pos3 },
			{ ...ok, kCache: rows }
		])
			expect(() => kvCacheAppend(rec, bad)).toThrow(ShapeMismatchError);
		expect(() => advancePositions(rec, { positions: posF })).toThrow(ShapeMismatchError);
		kvCacheAppend(rec, ok);
		for (const t of [cache, other, rows, wrongRows, pos, posF, pos3]) t.release();
	});
});
