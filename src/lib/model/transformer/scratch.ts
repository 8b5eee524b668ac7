/**
 * @file The transient scratch one model call makes through Recorder.scratch, worked out
 * beforehand for the memory estimate. The pool ends up holding, per size class, as many
 * buffers as the hungriest recorder asked for: matmul split-K partials, LoRA's [N, r],
 * attention row stats, the LM head's logits chunk and state. Counted at matmul's split
 * before its final recount, so an upper bound.
 */
import type { Gpu } from '../../gpu/device';
import { splitKCount } from '../../gpu/kernels/matmul';
import { sizeClass } from '../../gpu/pool';
import type { LoraConfig } from './lora';
import type { ModelConfig } from '../types';
import { projectionShape, PROJECTIONS } from '../hf/weight-spec';

/** The device limits the kernels' choices depend on; missing ones take WebGPU's defaults. */
export interface ScratchLimits {
	maxStorageBufferBindingSize: number;
	maxBufferSize: number;
	maxComputeInvocationsPerWorkgroup?: number;
	maxComputeWorkgroupStorageSize?: number;
	minUniformBufferOffsetAlignment?: number;
}

export interface ScratchEstimate {
	/** Peak bytes of scratch alive at once during the call. */
	bytes: number;
	/** The largest single scratch buffer. */
	largestBuffer: number;
}

/** uniform-arena.ts's page size. */
const UNIFORM_PAGE_BYTES = 65536;
/** Dispatches of one layer besides matmul: forward rmsnorm x2 (+2 q/k norm), bias x3,
 * rope x2, attention; backward swiglu, rmsnorm x2 (+2), add x2, attention x3, rope x2;
 * rounded up. */
const OTHER_DISPATCHES_PER_LAYER = 16;

/** Counts the scratch buffers (by size class) and dispatches of one recorder. */
class Tally {
	readonly classes = new Map<number, number>();
	dispatches = 0;
	constructor(readonly gpu: Gpu) {}
	add(bytes: number): void {
		const b = sizeClass(Math.max(4, Math.ceil(bytes / 4) * 4));
		this.classes.set(b, (this.classes.get(b) ?? 0) + 1);
	}
	/** Split-K partial sums of c [m, n] = op(a) [m, k] op(b) [k, n]. */
	matmul(m: number, n: number, k: number): void {
		if (m === 0 || n === 0) return;
		this.uniforms(1);
		const s = splitKCount(this.gpu, m, n, k);
		if (s > 1) {
			this.add(s * m * n * 4);
			this.uniforms(1); // the reduce pass
		}
	}
	/** Dispatches, each with a slot in a uniform page (kernel.ts Recorder.dispatch). */
	uniforms(dispatches: number): void {
		this.dispatches += dispatches;
	}
}

function limitsGpu(limits: ScratchLimits | undefined): Gpu {
	// chooseTile / chooseSplits read only these limits.
	return {
		limits: {
			maxStorageBufferBindingSize: limits?.maxStorageBufferBindingSize ?? 128 * 2 ** 20,
			maxBufferSize: limits?.maxBufferSize ?? 256 * 2 ** 20,
			maxComputeInvocationsPerWorkgroup: limits?.maxComputeInvocationsPerWorkgroup ?? 256,
			maxComputeWorkgroupStorageSize: limits?.maxComputeWorkgroupStorageSize ?? 16384,
			minUniformBufferOffsetAlignment: limits?.minUniformBufferOffsetAlignment ?? 256
		}
	} as unknown as Gpu;
}

export interface ScratchOptions {
	config: ModelConfig;
	B: number;
	T: number;
	mode: 'score' | 'train';
	/** Training: each layer's backward first recomputes its forward (default true). */
	recompute?: boolean;
	lora?: LoraConfig;
	limits?: ScratchLimits;
	/** Vocabulary rows per logits chunk (logsoftmax.ts's plan). */
	logitRows: number;
	/** Rows per chunk of the embedding / lm_head weights (weights.ts). */
	weightChunkRows: number;
	/** Bytes per element of the lm_head (4 for f32, 2 for f16); default 4. */
	headWeightBytes?: number;
}

/** Peak scratch bytes of one call; see the file comment. */
export function estimateScratch(o: ScratchOptions): ScratchEstimate {
	const { config, lora } = o;
	const N = o.B * o.T;
	const C = config.hiddenSize;
	const V = config.vocabSize;
	const gpu = limitsGpu(o.limits);
	const r = lora?.rank ?? 0;
	const targets = new Set(lora?.targetModules ?? []);

	/** One layer's forward (`recompute`: the backward's, which stops before down_proj). */
	const forward = (t: Tally, recompute: boolean) => {
		t.uniforms(OTHER_DISPATCHES_PER_LAYER);
		for (const name of PROJECTIONS) {
			const [out, inF] = projectionShape(config, name);
			if (!(recompute && name === 'down_proj')) t.matmul(N, out, inF);
			if (!targets.has(name)) continue;
			t.matmul(N, r, inF); // x A^T
			if (!(recompute && name === 'down_proj')) t.matmul(N, out, r); // y += xa B^T
		}
	};
	const backward = (t: Tally) => {
		for (const name of PROJECTIONS) {
			const [out, inF] = projectionShape(config, name);
			t.matmul(N, inF, out); // dx = dy W
			if (!targets.has(name)) continue;
			t.add(N * r * 4); // dxa
			t.matmul(out, r, N); // dB
			t.matmul(N, r, out); // dxa
			t.matmul(r, inF, N); // dA
			t.matmul(N, inF, r); // dx += dxa A
		}
		t.add(8 * N * config.numHeads); // attention row stats
		t.uniforms(OTHER_DISPATCHES_PER_LAYER);
	};
	// The LM head's vocabulary pieces: each weight chunk cut into logitRows.
	const pieces: number[] = [];
	let copies = false;
	for (let w = 0; w < V; w += o.weightChunkRows) {
		const rows = Math.min(o.weightChunkRows, V - w);
		if (rows > o.logitRows) copies = true;
		for (let p = 0; p < rows; p += o.logitRows) pieces.push(Math.min(o.logitRows, rows - p));
	}
	const head = (t: Tally, back: boolean) => {
		t.add(N * o.logitRows * 4);
		if (copies) t.add(o.logitRows * C * (o.headWeightBytes ?? 4));
		if (!back) {
			t.add(N * 16); // online-softmax state
			t.add(N * 4); // entropy
		}
		t.uniforms(1); // final rmsnorm or its backward
		t.add(4 * N); // the embedding's status word, or reading the logprobs back
		for (const rows of pieces) {
			t.uniforms(1); // the chunk's softmax pass
			t.matmul(N, rows, C);
			if (back) t.matmul(N, C, rows);
		}
	};

	const tally = (record: (t: Tally) => void) => {
		const t = new Tally(gpu);
		record(t);
		return t;
	};
	// The recorders of a call: one per layer of the forward, the head's; in training also
	// the top layer's recompute + backward with the head's backward, and one per layer below.
	const recorders = [tally((t) => forward(t, false)), tally((t) => head(t, false))];
	if (o.mode === 'train') {
		const layerBackward = (t: Tally) => {
			if (o.recompute ?? true) forward(t, true);
			backward(t);
		};
		recorders.push(tally(layerBackward));
		recorders.push(
			tally((t) => {
				head(t, true);
				layerBackward(t);
			})
		);
	}
	const most = new Map<number, number>();
	for (const t of recorders)
		for (const [size, count] of t.classes) most.set(size, Math.max(most.get(size) ?? 0, count));
	const slot = gpu.limits.minUniformBufferOffsetAlignment;
	const slotsPerPage = Math.floor(UNIFORM_PAGE_BYTES / slot);
	const pages = Math.max(...recorders.map((t) => Math.ceil(t.dispatches / slotsPerPage)));
	let bytes = pages * UNIFORM_PAGE_BYTES;
	for (const [size, count] of most) bytes += size * count;
	return { bytes, largestBuffer: Math.max(0, ...most.keys()) };
}
