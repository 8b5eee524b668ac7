/**
 * @file How kernels reach the GPU: pipelines cached per device, uniform parameters packed
 * in order, and a Recorder putting many dispatches into one pass and one submit. Binding
 * convention: storage buffers at @group(0) @binding(0..n-1) in the wrapper's order, then
 * one uniform struct of 4-byte scalars at @binding(n) in `Params` order. Layout 'auto':
 * every declared binding must be used.
 */
import type { Gpu } from './device';
import { OverLimitError } from './errors';
import type { BufferPool } from './pool';
import { profilerOf } from './profiler';
import type { Tensor } from './tensor';
import { UniformArena } from './uniform-arena';

export interface KernelSource {
	/** Unique per WGSL variant: the pipeline cache key together with `entryPoint`. */
	readonly name: string;
	readonly code: string;
	readonly entryPoint?: string;
}

interface CompiledKernel {
	pipeline: GPUComputePipeline;
	/** Asked for once: each getBindGroupLayout call makes a new object. */
	layout: GPUBindGroupLayout;
}

const pipelines = new WeakMap<GPUDevice, Map<string, CompiledKernel>>();

function compiled(gpu: Gpu, kernel: KernelSource): CompiledKernel {
	let cache = pipelines.get(gpu.device);
	if (!cache) pipelines.set(gpu.device, (cache = new Map()));
	const key = `${kernel.name}:${kernel.entryPoint ?? 'main'}`;
	let entry = cache.get(key);
	if (!entry) {
		const module = gpu.device.createShaderModule({ label: kernel.name, code: kernel.code });
		const pipeline = gpu.device.createComputePipeline({
			label: kernel.name,
			layout: 'auto',
			compute: { module, entryPoint: kernel.entryPoint ?? 'main' }
		});
		entry = { pipeline, layout: pipeline.getBindGroupLayout(0) };
		cache.set(key, entry);
	}
	return entry;
}

export function pipelineFor(gpu: Gpu, kernel: KernelSource): GPUComputePipeline {
	return compiled(gpu, kernel).pipeline;
}

/** Uniform parameters, written in the order of the WGSL struct's fields. */
export class Params {
	readonly #values: { type: 'u32' | 'i32' | 'f32'; value: number }[] = [];
	u32(value: number): this {
		this.#values.push({ type: 'u32', value });
		return this;
	}
	i32(value: number): this {
		this.#values.push({ type: 'i32', value });
		return this;
	}
	f32(value: number): this {
		this.#values.push({ type: 'f32', value });
		return this;
	}
	/** Bytes padded to 16 (uniform structs are 16-byte aligned in size). */
	bytes(): ArrayBuffer {
		const n = Math.max(4, Math.ceil(this.#values.length / 4) * 4);
		const buf = new ArrayBuffer(n * 4);
		const view = new DataView(buf);
		this.#values.forEach(({ type, value }, i) => {
			if (type === 'f32') view.setFloat32(i * 4, value, true);
			else if (type === 'i32') view.setInt32(i * 4, value, true);
			else view.setUint32(i * 4, value, true);
		});
		return buf;
	}
}

export type Binding = Tensor | GPUBuffer | GPUBufferBinding;

function resourceOf(binding: Binding): GPUBufferBinding {
	if ('gpu' in binding) return { buffer: binding.buffer };
	if ('buffer' in binding) return binding;
	return { buffer: binding };
}

/** Workgroup counts [x, y, z] for `n` workgroups in one dimension, folded into y past the
 * per-dimension limit (65535). Kernels recover the index with `linear_workgroup` below. */
export function grid(gpu: Gpu, n: number): [number, number, number] {
	const max = gpu.limits.maxComputeWorkgroupsPerDimension;
	if (n <= max) return [Math.max(1, n), 1, 1];
	const y = Math.ceil(n / max);
	if (y > max) throw new OverLimitError(`${n} workgroups exceed this device's dispatch limit`);
	return [Math.ceil(n / y), y, 1];
}

/** WGSL: the flat workgroup index of a dispatch made with `grid`. */
export const LINEAR_WORKGROUP_WGSL = /* wgsl */ `
fn linear_workgroup(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
  return wid.x + wid.y * nwg.x;
}`;

/**
 * The opening of a kernel's entry point: `size` invocations a group (WORKGROUP_MAIN_WGSL: the
 * module's WG), the group's id `wid` on a grid of `nwg` (see linear_workgroup) and the
 * invocation's `lid`.
 */
export const workgroupMainWgsl = (size: string) => /* wgsl */ `@compute @workgroup_size(${size})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {`;
export const WORKGROUP_MAIN_WGSL = workgroupMainWgsl('WG');

/**
 * Records dispatches and copies into one command buffer. Nothing runs until `submit()`.
 * Uniform parameters go into shared pages (uniform-arena.ts). Given a pool, its scratch
 * buffers come from the pool and go back to it as soon as the work is submitted: a model
 * step asks for thousands of them, and creating (and zero-filling) a fresh storage buffer
 * each time dominated the host's time per step. Giving them back at submit, not when the
 * GPU is done, is safe because the queue runs in order: whoever takes a buffer next
 * records work (or a queue write) that the queue runs after this submit. Without a pool,
 * scratch buffers are the recorder's own, destroyed once the GPU is done with them.
 */
export class Recorder {
	#encoder: GPUCommandEncoder;
	#pass: GPUComputePassEncoder | null = null;
	readonly #uniforms: UniformArena;
	readonly #temporaries: GPUBuffer[] = [];
	readonly #pooledScratch: GPUBuffer[] = [];
	#dispatches = 0;

	constructor(
		readonly gpu: Gpu,
		readonly pool?: BufferPool
	) {
		this.#encoder = gpu.device.createCommandEncoder();
		this.#uniforms = new UniformArena(gpu);
	}

	get dispatchCount(): number {
		return this.#dispatches;
	}

	dispatch(
		kernel: KernelSource,
		bindings: readonly Binding[],
		workgroups: number | readonly [number, number, number],
		params?: Params
	): void {
		const { pipeline, layout } = compiled(this.gpu, kernel);
		const entries: GPUBindGroupEntry[] = bindings.map((b, i) => ({
			binding: i,
			resource: resourceOf(b)
		}));
		if (params)
			entries.push({ binding: bindings.length, resource: this.#uniforms.put(params.bytes()) });
		const bindGroup = this.gpu.device.createBindGroup({ layout, entries });
		const [x, y, z] = typeof workgroups === 'number' ? grid(this.gpu, workgroups) : workgroups;
		const profiler = profilerOf(this.gpu);
		if (profiler) {
			// Profiling: one timed pass per dispatch (see profiler.ts).
			this.#endPass();
			const timestampWrites = profiler.passTimestamps(kernel.name);
			this.#pass = this.#encoder.beginComputePass(timestampWrites ? { timestampWrites } : {});
		}
		this.#pass ??= this.#encoder.beginComputePass();
		this.#pass.setPipeline(pipeline);
		this.#pass.setBindGroup(0, bindGroup);
		this.#pass.dispatchWorkgroups(x, y, z);
		this.#dispatches++;
	}

	/** Copies bytes between buffers (ends the current compute pass). */
	copy(src: GPUBuffer, srcOffset: number, dst: GPUBuffer, dstOffset: number, bytes: number): void {
		this.#endPass();
		this.#encoder.copyBufferToBuffer(src, srcOffset, dst, dstOffset, bytes);
	}

	/** Zeroes `bytes` (a multiple of 4) of a buffer from `offset` (ends the current compute
	 * pass). */
	clear(buffer: GPUBuffer, offset: number, bytes: number): void {
		this.#endPass();
		this.#encoder.clearBuffer(buffer, offset, Math.ceil(bytes / 4) * 4);
	}

	/** A zero-filled scratch buffer of at least `bytes` that lives until this recorder's
	 * work is done on the GPU (pooled buffers may be larger: bind them whole). */
	scratch(bytes: number): GPUBuffer {
		const size = Math.max(4, Math.ceil(bytes / 4) * 4);
		if (this.pool) {
			const buffer = this.pool.acquire(size, 'a scratch buffer');
			this.#pooledScratch.push(buffer);
			// A reused buffer holds old values; kernels expect a fresh, zeroed one.
			this.#endPass();
			this.#encoder.clearBuffer(buffer, 0, buffer.size);
			return buffer;
		}
		const buffer = this.gpu.device.createBuffer({ size, usage: 0x0080 | 0x0004 | 0x0008 });
		this.#temporaries.push(buffer);
		return buffer;
	}

	#endPass(): void {
		this.#pass?.end();
		this.#pass = null;
	}

	/** Submits the recorded work (the recorder can then record more); resolves when the
	 * GPU has finished it. */
	async submit(): Promise<void> {
		this.#endPass();
		const collectTimes = profilerOf(this.gpu)?.resolve(this.#encoder);
		this.#uniforms.flush();
		this.gpu.device.queue.submit([this.#encoder.finish()]);
		this.#encoder = this.gpu.device.createCommandEncoder();
		for (const b of this.#pooledScratch.splice(0)) this.pool?.returnIdle(b);
		const temporaries = this.#temporaries.splice(0);
		await this.gpu.device.queue.onSubmittedWorkDone();
		for (const b of temporaries) b.destroy();
		await collectTimes?.();
	}
}

/** Records with `record`, submits, and waits for the GPU: for one-off calls and tests. */
export async function run(gpu: Gpu, record: (rec: Recorder) => void): Promise<void> {
	const rec = new Recorder(gpu);
	record(rec);
	await rec.submit();
}
