/**
 * @file The matmul benchmark's measuring (bench.ts runs it): random operands filled on the
 * device, many dispatches recorded into one pass and one submit, timed from submit to
 * onSubmittedWorkDone (or by GPU timestamps) after a warmup, repetitions sized so one submit
 * lasts about TARGET_MS, best of TRIALS; and each variant checked against the CPU reference.
 */
import type { Gpu } from '../../src/lib/gpu/device';
import { Params, Recorder, grid, pipelineFor, type KernelSource } from '../../src/lib/gpu/kernel';
import type { MatmulArgs } from '../../src/lib/gpu/kernels/matmul';
import type { OperandType } from '../../src/lib/gpu/kernels/matmul.wgsl';
import { compareArrays } from '../../src/lib/gpu/reference/allclose';
import { matmulCases } from '../../src/lib/gpu/selftest/matmul';
import { createTensor, type Tensor } from '../../src/lib/gpu/tensor';

export const TARGET_MS = process.argv.includes('--sweep') ? 80 : 120;
export const TRIALS = 3;
export const log = (...x: unknown[]) => console.error('[bench]', ...x);

export type Op = 'NT' | 'NN' | 'TN';
export interface Shape {
	name: string;
	op: Op;
	what: string;
	m: number;
	n: number;
	k: number;
}

// ---------------------------------------------------------------- device-side data fill
export const FILL: KernelSource = {
	name: 'bench.fill',
	code: /* wgsl */ `
@group(0) @binding(0) var<storage, read_write> x: array<u32>; // raw words of any tensor
struct Params { words: u32, seed: u32, f16: u32 }
@group(0) @binding(1) var<uniform> p: Params;
fn hash(v: u32) -> u32 { var h = v * 747796405u + 2891336453u; h = ((h >> ((h >> 28u) + 4u)) ^ h) * 277803737u; return (h >> 22u) ^ h; }
fn val(i: u32) -> f32 { return f32(hash(i ^ p.seed) >> 8u) / 16777216.0 - 0.5; }
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
  let i = g.x + g.y * n.x * 256u;
  if (i >= p.words) { return; }
  if (p.f16 == 1u) { x[i] = pack2x16float(vec2<f32>(val(2u * i), val(2u * i + 1u))); }
  else { x[i] = bitcast<u32>(val(i)); }
}`
};

export function randomTensor(gpu: Gpu, shape: number[], dtype: OperandType, seed: number): Tensor {
	const t = createTensor(gpu, shape, dtype);
	const words = Math.ceil(t.byteLength / 4);
	const groups = Math.ceil(words / 256);
	const x = Math.min(groups, 65535);
	const rec = new Recorder(gpu);
	rec.dispatch(
		FILL,
		[t],
		[x, Math.ceil(groups / x), 1],
		new Params()
			.u32(words)
			.u32(seed)
			.u32(dtype === 'f16' ? 1 : 0)
	);
	void rec.submit();
	return t;
}

// ---------------------------------------------------------------- timing
export type Dispatch = (rec: Recorder, a: MatmulArgs) => void;

/**
 * Quacks like a Recorder (dispatch, scratch, gpu) but opens its one compute pass with
 * timestamp writes, so a run's time is the GPU's, without Dawn's command recording (which
 * Dawn does at submit) or pipeline compilation in it.
 */
export class TimedRecorder {
	readonly #encoder: GPUCommandEncoder;
	readonly #pass: GPUComputePassEncoder;
	readonly #query: GPUQuerySet;
	readonly #temporaries: GPUBuffer[] = [];
	constructor(readonly gpu: Gpu) {
		this.#encoder = gpu.device.createCommandEncoder();
		this.#query = gpu.device.createQuerySet({ type: 'timestamp', count: 2 });
		this.#pass = this.#encoder.beginComputePass({
			timestampWrites: {
				querySet: this.#query,
				beginningOfPassWriteIndex: 0,
				endOfPassWriteIndex: 1
			}
		});
	}
	dispatch(
		kernel: KernelSource,
		bindings: readonly (Tensor | GPUBuffer)[],
		workgroups: number | readonly [number, number, number],
		params?: Params
	): void {
		const pipeline = pipelineFor(this.gpu, kernel);
		const entries: GPUBindGroupEntry[] = bindings.map((b, i) => ({
			binding: i,
			resource: { buffer: 'gpu' in b ? b.buffer : b }
		}));
		if (params) {
			const bytes = params.bytes();
			const u = this.gpu.device.createBuffer({ size: bytes.byteLength, usage: 0x0040 | 0x0008 });
			this.gpu.device.queue.writeBuffer(u, 0, bytes);
			this.#temporaries.push(u);
			entries.push({ binding: bindings.length, resource: { buffer: u } });
		}
		const group = this.gpu.device.createBindGroup({
			layout: pipeline.getBindGroupLayout(0),
			entries
		});
		const [x, y, z] = typeof workgroups === 'number' ? grid(this.gpu, workgroups) : workgroups;
		this.#pass.setPipeline(pipeline);
		this.#pass.setBindGroup(0, group);
		this.#pass.dispatchWorkgroups(x, y, z);
	}
	scratch(bytes: number): GPUBuffer {
		const b = this.gpu.device.createBuffer({
			size: Math.max(4, Math.ceil(bytes / 4) * 4),
			usage: 0x0080 | 0x0004 | 0x0008
		});
		this.#temporaries.push(b);
		return b;
	}
	/** Submits; resolves to the pass's GPU time in ms. */
	async submit(): Promise<number> {
		this.#pass.end();
		const resolve = this.gpu.device.createBuffer({ size: 16, usage: 0x0200 | 0x0004 });
		const read = this.gpu.device.createBuffer({ size: 16, usage: 0x0001 | 0x0008 });
		this.#encoder.resolveQuerySet(this.#query, 0, 2, resolve, 0);
		this.#encoder.copyBufferToBuffer(resolve, 0, read, 0, 16);
		this.gpu.device.queue.submit([this.#encoder.finish()]);
		await read.mapAsync(0x0001);
		const [t0, t1] = new BigUint64Array(read.getMappedRange().slice(0));
		for (const b of [resolve, read, ...this.#temporaries]) b.destroy();
		this.#query.destroy();
		return Number(t1 - t0) / 1e6;
	}
}

export async function withErrors<T>(gpu: Gpu, f: () => Promise<T>): Promise<T> {
	gpu.device.pushErrorScope('validation');
	gpu.device.pushErrorScope('internal');
	let result: T | undefined;
	let thrown: unknown;
	try {
		result = await f();
	} catch (e) {
		thrown = e;
	}
	const internal = await gpu.device.popErrorScope();
	const validation = await gpu.device.popErrorScope();
	const e = validation ?? internal;
	if (e) throw new Error(e.message.slice(0, 800));
	if (thrown !== undefined) throw thrown;
	return result as T;
}

export async function timeShape(
	gpu: Gpu,
	s: Shape,
	dtype: OperandType,
	dispatch: Dispatch
): Promise<{ ms: number; tflops: number; reps: number }> {
	const aShape = s.op === 'TN' ? [s.k, s.m] : [s.m, s.k];
	const bShape = s.op === 'NT' ? [s.n, s.k] : [s.k, s.n];
	const a = randomTensor(gpu, aShape, dtype, 1);
	const b = randomTensor(gpu, bShape, dtype, 2);
	const c = createTensor(gpu, [s.m, s.n], 'f32');
	const margs: MatmulArgs = { a, b, c, transA: s.op === 'TN', transB: s.op === 'NT' };
	try {
		return await withErrors(gpu, async () => {
			const submit = async (reps: number) => {
				if (gpu.caps.timestampQuery) {
					const rec = new TimedRecorder(gpu);
					for (let i = 0; i < reps; i++) dispatch(rec as unknown as Recorder, margs);
					return rec.submit();
				}
				const rec = new Recorder(gpu);
				for (let i = 0; i < reps; i++) dispatch(rec, margs);
				const t0 = performance.now();
				await rec.submit();
				return performance.now() - t0;
			};
			await submit(2); // compile + warm
			const est = (await submit(3)) / 3;
			const reps = Math.max(3, Math.min(2000, Math.ceil(TARGET_MS / Math.max(est, 1e-3))));
			let best = Infinity;
			for (let t = 0; t < TRIALS; t++) best = Math.min(best, (await submit(reps)) / reps);
			const flops = 2 * s.m * s.n * s.k;
			return { ms: best, tflops: flops / (best * 1e-3) / 1e12, reps };
		});
	} finally {
		for (const t of [a, b, c]) t.release();
	}
}

// ---------------------------------------------------------------- correctness on this device
export async function checkCases(
	gpu: Gpu,
	label: string,
	specs: Parameters<typeof matmulCases>[0]
): Promise<{ variant: string; case: string; maxAbsErr: number; atol: number; pass: boolean }[]> {
	const out = [];
	for (const c of matmulCases(specs)) {
		log(label, c.name);
		try {
			const cmps = await withErrors(gpu, () => c.run(gpu));
			for (const cmp of cmps) {
				const r = compareArrays(cmp.actual, cmp.expected, cmp);
				out.push({
					variant: label,
					case: c.name,
					maxAbsErr: r.maxAbsErr,
					atol: cmp.atol,
					pass: r.pass
				});
			}
		} catch (e) {
			out.push({
				variant: label,
				case: c.name,
				maxAbsErr: NaN,
				atol: NaN,
				pass: false,
				error: String(e)
			});
		}
	}
	return out;
}

/** Shapes every variant is checked on: all transposes, beta accumulation, batching. */
export function checkSpecs(dtype: OperandType) {
	const t = [
		{ transA: false, transB: false },
		{ transA: false, transB: true },
		{ transA: true, transB: false }
	];
	return [
		...t.map((x) => ({ m: 256, n: 256, k: 320, aType: dtype, bType: dtype, ...x })),
		{ m: 128, n: 256, k: 64, beta: 1, alpha: 0.5, aType: dtype, bType: dtype },
		{ m: 128, n: 128, k: 96, batch: 2, aBatched: true, transB: true, aType: dtype, bType: dtype }
	];
}
