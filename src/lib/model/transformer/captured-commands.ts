/**
 * @file Kernel dispatches recorded once and replayed every decode step (its changing state
 * lives in GPU buffers): uniforms, bind groups and scratch made once, a replay only
 * setPipeline / setBindGroup / dispatch. Uniforms share one buffer (`setParams` rewrites a
 * slot). Scratch of kernels in SCRATCH_SAFE is reused as left; any other is cleared on
 * replay, as a Recorder would. Scratch inside `scope(fn)` serves the next scope. It owns
 * its buffers; the tensors it binds must outlive it.
 */
import type { Gpu } from '../../gpu/device';
import { grid, pipelineFor, type Binding, type KernelSource, type Params } from '../../gpu/kernel';
import type { Recorder } from '../../gpu/kernel';
import { sizeClass } from '../../gpu/pool';
import { STORAGE_USAGE } from '../../gpu/tensor';

/**
 * Kernels whose scratch needs no zeroing between replays, with why:
 *  - matmul.*: split-K partial sums, each written whole by its slice (beta 0) before the
 *    reduce pass of the same call reads them;
 *  - decode-attention.*: partial softmax states, each written by the split pass before the
 *    combine pass of the same call reads them;
 *  - embedding.forward: the out-of-range status word, only ever added to and read by
 *    nobody when it is a scratch buffer.
 */
const SCRATCH_SAFE: readonly RegExp[] = [
	/^matmul\./,
	/^decode-attention\./,
	/^embedding\.forward$/
];

const UNIFORM_USAGE = 0x0040 /* UNIFORM */ | 0x0008; /* COPY_DST */

interface DispatchCommand {
	kind: 'dispatch';
	pipeline: GPUComputePipeline;
	entries: GPUBindGroupEntry[];
	bindGroup?: GPUBindGroup;
	workgroups: readonly [number, number, number];
	/** Byte offset and length of its parameters in the uniform buffer. */
	uniform?: { offset: number; bytes: ArrayBuffer };
}

interface CopyCommand {
	kind: 'copy';
	src: GPUBuffer;
	srcOffset: number;
	dst: GPUBuffer;
	dstOffset: number;
	bytes: number;
}

interface ClearCommand {
	kind: 'clear';
	buffer: GPUBuffer;
}

type Command = DispatchCommand | CopyCommand | ClearCommand;

interface ScratchInfo {
	users: Set<string>;
}

function bufferOf(binding: Binding): GPUBuffer {
	if ('gpu' in binding) return binding.buffer; // a Tensor
	if ('buffer' in binding) return binding.buffer; // a GPUBufferBinding
	return binding;
}

function resourceOf(binding: Binding): GPUBufferBinding {
	if ('gpu' in binding) return { buffer: binding.buffer };
	if ('buffer' in binding) return binding;
	return { buffer: binding };
}

export class CapturedCommands {
	/** Kernel wrappers may look for a pool; a capture makes its own scratch. */
	readonly pool = undefined;
	#commands: Command[] = [];
	readonly #scratch = new Map<GPUBuffer, ScratchInfo>();
	/** Scratch free for reuse by a later scope, by size class. */
	readonly #free = new Map<number, GPUBuffer[]>();
	readonly #owned: GPUBuffer[] = [];
	#scope: GPUBuffer[] | null = null;
	#uniformBytes = 0;
	#uniform: GPUBuffer | null = null;
	#finished = false;
	#released = false;
	#dispatches = 0;

	constructor(readonly gpu: Gpu) {}

	/** This capture as the Recorder the kernel wrappers take (they call only `gpu`,
	 * `dispatch`, `copy` and `scratch`; anything else fails loudly, not silently). */
	get recorder(): Recorder {
		return this as unknown as Recorder;
	}

	get dispatchCount(): number {
		return this.#dispatches;
	}

	/** Scratch buffers the capture holds, and the bytes they take. */
	get scratchStats(): { buffers: number; bytes: number; clearedPerReplay: number } {
		let bytes = 0;
		for (const b of this.#scratch.keys()) bytes += b.size;
		const cleared = this.#commands.filter((c) => c.kind === 'clear').length;
		return { buffers: this.#scratch.size, bytes, clearedPerReplay: cleared };
	}

	dispatch(
		kernel: KernelSource,
		bindings: readonly Binding[],
		workgroups: number | readonly [number, number, number],
		params?: Params
	): void {
		this.#checkRecording();
		const pipeline = pipelineFor(this.gpu, kernel);
		const entries: GPUBindGroupEntry[] = bindings.map((b, i) => ({
			binding: i,
			resource: resourceOf(b)
		}));
		for (const b of bindings) this.#scratch.get(bufferOf(b))?.users.add(kernel.name);
		let uniform: DispatchCommand['uniform'];
		if (params) {
			const bytes = params.bytes();
			const align = this.gpu.limits.minUniformBufferOffsetAlignment;
			const offset = Math.ceil(this.#uniformBytes / align) * align;
			this.#uniformBytes = offset + bytes.byteLength;
			uniform = { offset, bytes };
		}
		const wg = typeof workgroups === 'number' ? grid(this.gpu, workgroups) : workgroups;
		this.#commands.push({ kind: 'dispatch', pipeline, entries, workgroups: wg, uniform });
		this.#dispatches++;
	}

	copy(src: GPUBuffer, srcOffset: number, dst: GPUBuffer, dstOffset: number, bytes: number): void {
		this.#checkRecording();
		for (const b of [src, dst]) this.#scratch.get(b)?.users.add('copy');
		this.#commands.push({ kind: 'copy', src, srcOffset, dst, dstOffset, bytes });
	}

	/** A zero-filled buffer of at least `bytes` (bind it whole), see the file comment. */
	scratch(bytes: number): GPUBuffer {
		this.#checkRecording();
		const size = sizeClass(Math.max(4, Math.ceil(bytes / 4) * 4));
		let buffer = this.#scope ? this.#free.get(size)?.pop() : undefined;
		if (!buffer) {
			buffer = this.gpu.device.createBuffer({ size, usage: STORAGE_USAGE });
			this.#owned.push(buffer);
			this.#scratch.set(buffer, { users: new Set() });
		}
		this.#scope?.push(buffer);
		this.#commands.push({ kind: 'clear', buffer }); // kept by finish() only if needed
		return buffer;
	}

	/** Records `fn`; the scratch it makes is reusable by later scopes once it returns.
	 * Scopes do not nest. */
	scope<T>(fn: () => T): T {
		if (this.#scope) throw new Error('CapturedCommands: scopes do not nest');
		this.#scope = [];
		try {
			return fn();
		} finally {
			const made = this.#scope;
			this.#scope = null;
			for (const b of new Set(made)) {
				let list = this.#free.get(b.size);
				if (!list) this.#free.set(b.size, (list = []));
				list.push(b);
			}
		}
	}

	/** Index of the next dispatch recorded (for `setParams`). */
	get nextDispatch(): number {
		return this.#dispatches;
	}

	/** Makes the uniform buffer and the bind groups; recording ends. */
	finish(): this {
		this.#checkRecording();
		this.#finished = true;
		this.#commands = this.#commands.filter(
			(c) => c.kind !== 'clear' || !isSafe(this.#scratch.get(c.buffer)!)
		);
		if (this.#uniformBytes > 0) {
			const uniform = this.gpu.device.createBuffer({
				size: Math.ceil(this.#uniformBytes / 16) * 16,
				usage: UNIFORM_USAGE
			});
			this.#owned.push(uniform);
			this.#uniform = uniform;
			const all = new Uint8Array(uniform.size);
			for (const c of this.#commands)
				if (c.kind === 'dispatch' && c.uniform)
					all.set(new Uint8Array(c.uniform.bytes), c.uniform.offset);
			this.gpu.device.queue.writeBuffer(uniform, 0, all);
		}
		const layouts = new Map<GPUComputePipeline, GPUBindGroupLayout>();
		for (const c of this.#commands) {
			if (c.kind !== 'dispatch') continue;
			let layout = layouts.get(c.pipeline);
			if (!layout) layouts.set(c.pipeline, (layout = c.pipeline.getBindGroupLayout(0)));
			const entries = [...c.entries];
			if (c.uniform)
				entries.push({
					binding: entries.length,
					resource: {
						buffer: this.#uniform!,
						offset: c.uniform.offset,
						size: c.uniform.bytes.byteLength
					}
				});
			c.bindGroup = this.gpu.device.createBindGroup({ layout, entries });
		}
		return this;
	}

	/** Rewrites the parameters of dispatch `index` (same struct, new values); the queue
	 * applies the write between the submits made before and after this call. */
	setParams(index: number, params: Params): void {
		if (!this.#finished || this.#released)
			throw new Error('CapturedCommands: setParams needs a finished, live capture');
		let i = -1;
		const c = this.#commands.find((c) => c.kind === 'dispatch' && ++i === index) as
			DispatchCommand | undefined;
		const bytes = params.bytes();
		if (!c?.uniform || c.uniform.bytes.byteLength !== bytes.byteLength)
			throw new Error(`CapturedCommands: dispatch ${index} has no parameters of this size`);
		this.gpu.device.queue.writeBuffer(this.#uniform!, c.uniform.offset, bytes);
	}

	/** Appends the recorded commands to `encoder`. */
	encode(encoder: GPUCommandEncoder): void {
		if (!this.#finished || this.#released)
			throw new Error('CapturedCommands: encode needs a finished, live capture');
		let pass: GPUComputePassEncoder | null = null;
		let pipeline: GPUComputePipeline | null = null;
		for (const c of this.#commands) {
			if (c.kind !== 'dispatch') {
				pass?.end();
				pass = null;
				if (c.kind === 'copy')
					encoder.copyBufferToBuffer(c.src, c.srcOffset, c.dst, c.dstOffset, c.bytes);
				else encoder.clearBuffer(c.buffer);
				continue;
			}
			if (!pass) {
				pass = encoder.beginComputePass();
				pipeline = null;
			}
			if (c.pipeline !== pipeline) pass.setPipeline((pipeline = c.pipeline));
			pass.setBindGroup(0, c.bindGroup!);
			pass.dispatchWorkgroups(c.workgroups[0], c.workgroups[1], c.workgroups[2]);
		}
		pass?.end();
	}

	/** Kernel wrappers never submit; a capture is replayed with `encode`. */
	submit(): Promise<void> {
		throw new Error('CapturedCommands: replay it with encode(), it does not submit');
	}

	release(): void {
		if (this.#released) return;
		this.#released = true;
		for (const b of this.#owned) b.destroy();
		this.#owned.length = 0;
	}

	#checkRecording(): void {
		if (this.#finished || this.#released)
			throw new Error('CapturedCommands: recording has ended (finish() or release())');
	}
}

function isSafe(s: ScratchInfo): boolean {
	for (const user of s.users) if (!SCRATCH_SAFE.some((re) => re.test(user))) return false;
	return true;
}
