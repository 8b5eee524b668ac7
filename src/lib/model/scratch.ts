/**
 * @file The transient scratch buffers one call of the model makes through Recorder.scratch,
 * worked out before the call (memory.ts adds them to the estimate). They are not pooled:
 * each recorder creates its own and destroys them once the GPU has run its work, so what
 * is alive at once depends on how many recorders are in flight (transformer.ts keeps at
 * most MAX_RECORDERS_ALIVE: one submitted and one being recorded).
 *
 * Per recorder, by kernel (the sizes the wrappers ask for):
 *  - matmul split-K partial sums, s x [M, N] per call that splits (matmul.ts chooseSplits);
 *    the largest item on real shapes (SmolLM2-135M at 8 x 512: ~21 MB per layer);
 *  - lora backward: dLoss/d(x A^T) [N, r] per adapter;
 *  - attention backward: row statistics [B, Hq, T] x vec2;
 *  - the LM head (logsoftmax.ts): one chunk of [N, rows] logits, its [N] state (16 B per
 *    token) and entropy, a copy of W's rows when a piece is part of a weight chunk, and
 *    every piece's matmul partial sums (each piece's matmul makes its own).
 * plus every dispatch's uniform buffer (tens of bytes each). Partial sums are counted with matmul's own tile and split choice at the slice count
 * before its final recount (which only lowers it), so the figure is an upper bound.
 */
import type { Gpu } from '../gpu/device';
import { chooseSplits, chooseTile, type MatmulProblem } from '../gpu/kernels/matmul';
import { sizeClass } from '../gpu/pool';
import type { LoraConfig } from './lora';
import type { ModelConfig } from './types';
import { projectionShape, type ProjectionName } from './weight-spec';

/** Recorders whose scratch can be alive at once: one submitted and not yet finished on
 * the GPU, one being recorded (transformer.ts's Submitter waits for the older one). */
export const MAX_RECORDERS_ALIVE = 2;

/** The device limits the kernels' choices depend on; missing ones take WebGPU's defaults. */
export interface ScratchLimits {
	maxStorageBufferBindingSize: number;
	maxBufferSize: number;
	maxComputeInvocationsPerWorkgroup?: number;
	maxComputeWorkgroupStorageSize?: number;
}

export interface ScratchEstimate {
	/** Peak bytes of scratch alive at once during the call. */
	bytes: number;
	/** The largest single scratch buffer. */
	largestBuffer: number;
}

/** A dispatch's Params, padded to 16 B: at most 8 scalars for the other kernels, 10 for
 * matmul's (kernel.ts Params.bytes). */
const UNIFORM_BYTES = 32;
const MATMUL_UNIFORM_BYTES = 48;
/** Dispatches of one layer besides matmul: forward rmsnorm x2 (+2 q/k norm), bias x3,
 * rope x2, attention; backward swiglu, rmsnorm x2 (+2), add x2, attention x3, rope x2;
 * rounded up. */
const OTHER_DISPATCHES_PER_LAYER = 16;

const PROJECTIONS: ProjectionName[] = [
	'q_proj',
	'k_proj',
	'v_proj',
	'o_proj',
	'gate_proj',
	'up_proj',
	'down_proj'
];

/** Counts scratch bytes of the recorded calls. */
class Tally {
	bytes = 0;
	largest = 0;
	constructor(readonly gpu: Gpu) {}
	add(bytes: number): void {
		// The model's recorders take scratch from its BufferPool: a whole size class each.
		const b = sizeClass(Math.max(4, Math.ceil(bytes / 4) * 4));
		this.bytes += b;
		this.largest = Math.max(this.largest, b);
	}
	/** Split-K partial sums of c [m, n] = op(a) [m, k] op(b) [k, n]. */
	matmul(m: number, n: number, k: number): void {
		const p: MatmulProblem = {
			m,
			n,
			k,
			batch: 1,
			strideA: 0,
			strideB: 0,
			aType: 'f32',
			bType: 'f32'
		};
		if (m === 0 || n === 0) return;
		this.uniforms(1, MATMUL_UNIFORM_BYTES);
		const s = chooseSplits(this.gpu, p, chooseTile(this.gpu, p));
		if (s > 1) {
			this.add(s * m * n * 4);
			this.uniforms(1); // the reduce pass
		}
	}
	/** Each dispatch's own uniform buffer (kernel.ts Recorder.dispatch). */
	uniforms(dispatches: number, bytes = UNIFORM_BYTES): void {
		this.bytes += dispatches * bytes;
	}
}

function limitsGpu(limits: ScratchLimits | undefined): Gpu {
	// chooseTile / chooseSplits read only these limits.
	return {
		limits: {
			maxStorageBufferBindingSize: limits?.maxStorageBufferBindingSize ?? 128 * 2 ** 20,
			maxBufferSize: limits?.maxBufferSize ?? 256 * 2 ** 20,
			maxComputeInvocationsPerWorkgroup: limits?.maxComputeInvocationsPerWorkgroup ?? 256,
			maxComputeWorkgroupStorageSize: limits?.maxComputeWorkgroupStorageSize ?? 16384
		}
	} as unknown as Gpu;
}

export interface ScratchOptions {
	config: ModelConfig;
	B: number;
	T: number;
	mode: 'score' | 'train';
	lora?: LoraConfig;
	limits?: ScratchLimits;
	/** Vocabulary rows per logits chunk (logsoftmax.ts's plan). */
	logitRows: number;
	/** Rows per chunk of the embedding / lm_head weights (weights.ts). */
	weightChunkRows: number;
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
		if (copies) t.add(o.logitRows * C * 4);
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
	const fwd = tally((t) => forward(t, false));
	const headFwd = tally((t) => head(t, false));
	// Forward: layer i+1 recorded while layer i runs; the head after the last layer.
	let peak = fwd.bytes + Math.max(fwd.bytes, headFwd.bytes);
	let largest = Math.max(fwd.largest, headFwd.largest);
	if (o.mode === 'train') {
		const bwd = tally((t) => {
			forward(t, true);
			backward(t);
		});
		const headBwd = tally((t) => head(t, true));
		// The head's backward shares a recorder with the top layer's.
		peak = Math.max(peak, headBwd.bytes + bwd.bytes + bwd.bytes);
		largest = Math.max(largest, bwd.largest, headBwd.largest);
	}
	return { bytes: peak, largestBuffer: largest };
}
