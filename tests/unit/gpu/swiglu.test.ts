import { describe, expect, it } from 'vitest';
import { ShapeMismatchError } from '../../../src/lib/gpu/errors';
import { Recorder, run } from '../../../src/lib/gpu/kernel';
import { swigluBackward, swigluForward } from '../../../src/lib/gpu/kernels/swiglu';
import { swigluCases, EXTREME_GATES } from '../../../src/lib/gpu/selftest/swiglu';
import { swigluBackwardRef, swigluRef } from '../../../src/lib/gpu/reference/swiglu';
import { createTensor, readTensor, uploadTensor } from '../../../src/lib/gpu/tensor';
import { itRunsCases, useGpu } from '../../helpers/gpu';

describe('swiglu', () => {
	const gpu = useGpu();
	itRunsCases(
		swigluCases([
			{ rows: 1, inter: 1, layout: 'separate' },
			{ rows: 1, inter: 1, layout: 'fused' },
			{ rows: 7, inter: 255, layout: 'separate' },
			{ rows: 3, inter: 257, layout: 'fused' },
			{ rows: 64, inter: 1536, layout: 'separate' },
			{ rows: 33, inter: 4864, layout: 'fused' },
			{ rows: 300, inter: 900, layout: 'separate' },
			// Qwen2.5-0.5B's MLP (I = 4864) over 512 tokens: 2.5M elements.
			{ rows: 512, inter: 4864, layout: 'fused' }
		]),
		gpu
	);

	it('gives finite, exact values at the extremes (silu(100) = 100, silu(-100) = 0)', async () => {
		const g = gpu();
		const n = EXTREME_GATES.length;
		const gate = uploadTensor(g, EXTREME_GATES, [1, n], 'f32');
		const up = uploadTensor(g, new Array(n).fill(1), [1, n], 'f32');
		const dh = uploadTensor(g, new Array(n).fill(1), [1, n], 'f32');
		const [h, dgate, dup] = [0, 1, 2].map(() => createTensor(g, [1, n], 'f32'));
		await run(g, (rec) => {
			swigluForward(rec, { gate, up, h });
			swigluBackward(rec, { input: { gate, up }, dh, grads: { dgate, dup } });
		});
		const hv = await readTensor(h);
		const dg = await readTensor(dgate);
		for (const v of [...hv, ...dg, ...(await readTensor(dup))])
			expect(Number.isFinite(v)).toBe(true);
		expect(hv[0]).toBeCloseTo(0, 30); // silu(-100) = -3.7e-42
		expect(hv[1]).toBe(100);
		expect(dg[0]).toBeCloseTo(0, 30); // silu'(-100) = -99 * 3.7e-44
		expect(dg[1]).toBe(1);
		expect(hv).toBeAllclose(swigluRef(EXTREME_GATES, new Array(n).fill(1)), {
			atol: 1e-6,
			rtol: 1e-5
		});
		const ref = swigluBackwardRef(EXTREME_GATES, new Array(n).fill(1), new Array(n).fill(1));
		expect(dg).toBeAllclose(ref.dgate, { atol: 1e-6, rtol: 1e-5 });
		for (const t of [gate, up, dh, h, dgate, dup]) t.release();
	});

	it('rejects mismatched shapes, wrong dtypes and mixed layouts', async () => {
		const g = gpu();
		const gate = createTensor(g, [4, 8], 'f32');
		const up = createTensor(g, [4, 8], 'f32');
		const upBad = createTensor(g, [4, 7], 'f32');
		const h = createTensor(g, [4, 8], 'f32');
		const hU32 = createTensor(g, [4, 8], 'u32');
		const gateUp = createTensor(g, [4, 16], 'f32');
		const gateUpBad = createTensor(g, [4, 15], 'f32');
		const dgateUp = createTensor(g, [4, 16], 'f32');
		const rec = new Recorder(g); // never submitted: every call below must throw first
		const attempts = [
			() => swigluForward(rec, { gate, up: upBad, h }),
			() => swigluForward(rec, { gate, up, h: hU32 }),
			() => swigluForward(rec, { gateUp: gateUpBad, h }),
			() =>
				swigluBackward(rec, {
					input: { gate, up },
					dh: h,
					grads: { dgateUp }
				}),
			() =>
				swigluBackward(rec, {
					input: { gateUp },
					dh: h,
					grads: { dgateUp: gateUpBad }
				})
		];
		for (const attempt of attempts) expect(attempt).toThrow(ShapeMismatchError);
		// Valid calls still work after the rejections.
		await run(g, (rec) => swigluForward(rec, { gateUp, h }));
		for (const t of [gate, up, upBad, h, hU32, gateUp, gateUpBad, dgateUp]) t.release();
	});
});
