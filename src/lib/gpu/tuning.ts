/**
 * @file The numbers kernels size their dispatches by (workgroups that fill the device, the
 * output sizes where larger matmul tiles pay), per kind of device. WebGPU shows no SM count,
 * so rows are keyed on the adapter info: 'nvidia-h200' (measured there), 'software'
 * (SwiftShader, any fallback adapter), and 'default' with the H200's numbers (on a smaller
 * GPU they cost a few extra split-K slices; small-GPU numbers would idle a large one).
 * Each Gpu carries its tuning (acquireGpu may override it); kernels read `tuningOf(gpu)`.
 */
import type { GpuAdapterSummary } from './device';

export interface GpuTuning {
	/** The table row this came from ('nvidia-h200', 'software', 'default'), or a name an
	 * override gave. Benchmarks record it next to the adapter. */
	name: string;
	/** Compute units that run workgroups at once: SMs on NVIDIA, marl tasks per dispatch on
	 * SwiftShader. The basis of targetWorkgroups; no kernel reads it. */
	computeUnits: number;
	/** Workgroups a dispatch should have for every compute unit to be busy. Read by
	 * matmul's split-K (chooseSplits: split K until the output tiles times the slices
	 * reach this), skinny's tiling (chooseTiling: more lanes per column and smaller
	 * workgroups while the call has fewer) and decode attention's key ranges
	 * (decodeSplitPlan). On the H200 two per SM, measured with matmul's split-K (run 2,
	 * matmul.ts); skinny and decode attention adopted the same target (designed, untimed). */
	targetWorkgroups: number;
	/** Outputs (M * N * batch) from which matmul takes 128x128 tiles (and the 128x128
	 * subgroup-matrix layout): from the H200 tile sweep (matmul.ts). */
	largeTileOutputs: number;
	/** Outputs from which matmul takes 128x64 tiles (64x64 below): from the H200 sweep, where
	 * 128x128 tiles on 4096 x 576 outputs (160 workgroups on 132 SMs) left a ragged wave. */
	tallTileOutputs: number;
	/** Outputs from which matmul takes 64x64 tiles (32x32 below). */
	mediumTileOutputs: number;
}

/** The H200: 132 SMs (NVIDIA's H200 spec), two workgroups each, and its tile sweep. */
export const H200_TUNING: GpuTuning = {
	name: 'nvidia-h200',
	computeUnits: 132,
	targetWorkgroups: 2 * 132,
	largeTileOutputs: 8 << 20,
	tallTileOutputs: 1 << 20,
	mediumTileOutputs: 1
};

/** Any GPU not in the table: the H200's numbers (the file's doc says why). */
export const DEFAULT_TUNING: GpuTuning = { ...H200_TUNING, name: 'default' };

/** A CPU renderer. SwiftShader runs a dispatch's workgroups as at most 16 marl tasks
 * (batchCount = 16 in SwiftShader's src/Pipeline/ComputeProgram.cpp), which its scheduler
 * spreads over one worker thread per CPU core; workgroups past 16 only queue behind each
 * other in those tasks. So 16 workgroups is the most parallelism a dispatch can use
 * there, and more (split-K slices, smaller skinny workgroups, more key ranges) is extra
 * CPU work and scratch with nothing to gain: one per task, no second one to hide
 * latency as on a GPU. Matmul takes 32x32 tiles at every size: timed there (2026-12-05,
 * 2-core machine) they beat 64x64 tiles 3.5x on a tiny model's prefill (outputs 32..64
 * columns wide, which 64-wide tiles half waste, and SwiftShader pays for every invocation)
 * and cut the backward test file's time by a quarter (77 -> 58 s); every tile variant keeps
 * its own check against the CPU reference (matmul.test.ts). */
export const SOFTWARE_TUNING: GpuTuning = {
	...H200_TUNING,
	name: 'software',
	computeUnits: 16,
	targetWorkgroups: 16,
	largeTileOutputs: Number.MAX_SAFE_INTEGER,
	tallTileOutputs: Number.MAX_SAFE_INTEGER,
	mediumTileOutputs: Number.MAX_SAFE_INTEGER
};

/** What tuningFor reads of an adapter (a GpuAdapterSummary has it all). */
export type TuningKey = Partial<
	Pick<
		GpuAdapterSummary,
		'vendor' | 'architecture' | 'device' | 'description' | 'isFallbackAdapter'
	>
>;

/** The table's row for an adapter (see the file's doc). */
export function tuningFor(adapter: TuningKey): GpuTuning {
	const names = [adapter.architecture, adapter.device, adapter.description]
		.map((s) => (s ?? '').toLowerCase())
		.join(' ');
	const vendor = (adapter.vendor ?? '').toLowerCase();
	if (adapter.isFallbackAdapter || names.includes('swiftshader')) return { ...SOFTWARE_TUNING };
	if (vendor === 'nvidia' && names.includes('h200')) return { ...H200_TUNING };
	return { ...DEFAULT_TUNING };
}

/** `base` with the fields of `override` (acquireGpu's `tuning` option); throws a RangeError
 * for a count that is not a positive integer. */
export function withOverride(base: GpuTuning, override?: Partial<GpuTuning>): GpuTuning {
	if (!override || Object.keys(override).length === 0) return base;
	const t = { ...base, name: `${base.name} (overridden)`, ...override };
	for (const key of [
		'computeUnits',
		'targetWorkgroups',
		'largeTileOutputs',
		'tallTileOutputs',
		'mediumTileOutputs'
	] as const) {
		if (!Number.isInteger(t[key]) || t[key] < 1)
			throw new RangeError(`GPU tuning: ${key} must be a positive integer, got ${t[key]}`);
	}
	return t;
}

/** The tuning kernels use for a gpu. A Gpu from acquireGpu always has one; an object made
 * by hand from limits alone (model/transformer/scratch.ts's estimate) gets the default row. */
export function tuningOf(gpu: { readonly tuning?: GpuTuning }): GpuTuning {
	return gpu.tuning ?? DEFAULT_TUNING;
}
