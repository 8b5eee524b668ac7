import { describe, expect, it } from 'vitest';
import { run } from '../../../src/lib/gpu/kernel';
import { rmsNormForward } from '../../../src/lib/gpu/kernels/rmsnorm';
import { KernelProfiler } from '../../../src/lib/gpu/profiler';
import { createTensor } from '../../../src/lib/gpu/tensor';
import { useGpu } from '../../helpers/gpu';

describe('kernel profiler', () => {
	const gpu = useGpu();

	it('times each dispatch by kernel name while attached, and nothing after detach', async () => {
		const g = gpu();
		const x = createTensor(g, [64, 1024], 'f32');
		const weight = createTensor(g, [1024], 'f32');
		const y = createTensor(g, [64, 1024], 'f32');
		const rstd = createTensor(g, [64], 'f32');
		const forward = () => run(g, (rec) => rmsNormForward(rec, { x, weight, y, rstd, eps: 1e-6 }));
		const profiler = new KernelProfiler(g);
		await run(g, (rec) => {
			rmsNormForward(rec, { x, weight, y, rstd, eps: 1e-6 });
			rmsNormForward(rec, { x, weight, y, rstd, eps: 1e-6 });
		});
		await forward();
		const report = profiler.report();
		expect(report.kernels.map((k) => [k.name, k.count])).toEqual([['rmsnorm.forward', 3]]);
		expect(report.kernels[0].totalMs).toBeGreaterThan(0);
		expect(report.totalMs).toBe(report.kernels[0].totalMs);
		profiler.detach();
		await forward();
		expect(profiler.report().kernels[0].count).toBe(3);
		for (const t of [x, weight, y, rstd]) t.release();
	});
});
