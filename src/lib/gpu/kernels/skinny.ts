/**
 * @file Skinny matmul, y[B, N] = x[B, K] W[N, K]^T for a decode step's few rows, with the
 * step's work around it fused: bias, LoRA's up projection, beta y (the residual), several
 * weights reading one x in one dispatch, gate/up with SwiGLU, the input RMSNorm. Weights
 * f32 or f16 (widened from u32 words). Why: the tiled matmul wastes a 64-row tile on B rows,
 * and a decode step is ~100 small products bound by weight reads and per-dispatch cost.
 * chooseTiling picks lanes, cols, rows and groups; the variants to time on a GPU are
 * bench-generate --decode-matmul's.
 */
import type { Gpu } from '../device';
import { OverLimitError, ShapeMismatchError, assertShape } from '../errors';
import { grid, Params, type Binding, type KernelSource, type Recorder } from '../kernel';
import type { Tensor } from '../tensor';
import { tuningOf } from '../tuning';
import {
	MAX_SEGMENTS,
	skinnyBindingCount,
	skinnyName,
	skinnyVariantProblem,
	skinnyWgsl,
	skinnyWorkgroupFloats,
	type SkinnyOutput,
	type SkinnyTiling,
	type SkinnyVariant
} from './skinny.wgsl';

export type { SkinnyTiling } from './skinny.wgsl';

/** LoRA's up projection fused into the epilogue: + scale * xa[:, offset : offset + r] B^T. */
export interface SkinnyLora {
	/** x A^T of every LoRA segment of the call, [B, R] f32 (one tensor for all segments). */
	xa: Tensor;
	/** First column of this segment's r columns in xa. */
	offset: number;
	/** Up projection [N, r] f32. */
	b: Tensor;
	scale: number;
}

/** One weight matrix of a call. */
export interface SkinnySegment {
	/** [N, K], f32 or f16, row-major (nn.Linear's weight). */
	w: Tensor;
	/** [N] f32. */
	bias?: Tensor;
	lora?: SkinnyLora;
	/** Output [B, ldy] f32 (any shape of B * ldy elements); not used with `swiglu`. */
	y?: Tensor;
	/** First column written in y (default 0): y[b, yOffset + n]. */
	yOffset?: number;
}

export interface SkinnyArgs {
	/** [B, K] f32 (any shape whose last dim is K). */
	x: Tensor;
	segments: readonly SkinnySegment[];
	/** y = x W^T (+ ...) + beta * y; default 0 (y not read). */
	beta?: number;
	/** RMS-normalise x first: x * rstd * weight, rstd = 1 / sqrt(mean(x^2) + eps) per row
	 * (the decode step's input norms, fused). weight [K] f32. */
	norm?: { weight: Tensor; eps: number };
	/** With two segments (gate, up) of one N: out[B, N] = silu(gate) * up. */
	swiglu?: Tensor;
	/** Override the chosen tiling (benchmarks, tests). */
	tiling?: Partial<SkinnyTiling>;
}

const sources = new Map<string, KernelSource>();
function kernelFor(v: SkinnyVariant): KernelSource {
	const name = skinnyName(v);
	let k = sources.get(name);
	if (!k) sources.set(name, (k = { name, code: skinnyWgsl(v) }));
	return k;
}

/** The device's fixed subgroup size, or 0 (no subgroups, or a size that varies). */
export function fixedSubgroupSize(gpu: Gpu): number {
	const { subgroupMinSize: lo, subgroupMaxSize: hi } = gpu.adapter;
	return gpu.caps.subgroups && lo > 0 && lo === hi ? hi : 0;
}

const pow2Floor = (n: number) => 2 ** Math.floor(Math.log2(Math.max(1, n)));
/** Accumulators per invocation (rows x cols x 1 or 2): stays in registers. */
const MAX_ACCUMULATORS = 32;

/**
 * The default tiling for B rows, K, the columns of the call and the weight vector width.
 * See the file's doc for where each rule comes from (a design for the H200, untimed).
 */
export function chooseTiling(
	gpu: Gpu,
	p: { rows: number; k: number; columns: number; vectorWidth: number; pair: boolean }
): SkinnyTiling {
	const S = fixedSubgroupSize(gpu);
	// Workgroups that fill the device (tuning.ts; matmul's split-K aims for the same).
	const target = tuningOf(gpu).targetWorkgroups;
	const T = p.pair ? 2 : 1;
	const rows = Math.min(p.rows, Math.floor(MAX_ACCUMULATORS / T), 16);
	const cols = Math.max(1, Math.min(4, Math.floor(MAX_ACCUMULATORS / (T * rows))));
	const vectors = Math.ceil(p.k / p.vectorWidth);
	let lanes = Math.min(32, Math.max(4, pow2Floor(vectors / 8)));
	const groupsTotal = Math.ceil(p.columns / cols);
	// Narrow outputs (LoRA's A: N = r): more lanes along K instead of idle SMs.
	if (groupsTotal < target) lanes = Math.min(256, Math.max(lanes, pow2Floor(vectors / 4)));
	const minThreads = Math.max(S, lanes);
	const maxThreads = Math.max(minThreads, 128);
	let threads = maxThreads;
	while (threads > minThreads && (groupsTotal * lanes) / threads < target) threads /= 2;
	return { rows, cols, lanes, groups: Math.max(1, threads / lanes), subgroup: S };
}

interface Prepared {
	B: number;
	K: number;
	n: number[];
}

function prepare(args: SkinnyArgs): Prepared {
	const { x, segments } = args;
	const what = `skinny matmul: x [${x.shape}]`;
	const K = x.shape[x.shape.length - 1] ?? 0;
	const B = K > 0 ? x.size / K : 0;
	assertShape(x.dtype === 'f32' && K > 0, () => `${what}: x must be f32 with K > 0`);
	assertShape(segments.length >= 1, () => `${what}: give at least one weight segment`);
	assertShape(
		!args.norm || (args.norm.weight.size === K && args.norm.weight.dtype === 'f32'),
		() => `${what}: the norm weight must be [${K}] f32; got [${args.norm?.weight.shape}]`
	);
	const n: number[] = [];
	for (const [i, s] of segments.entries()) {
		const N = s.w.shape[0];
		assertShape(
			s.w.shape.length === 2 && s.w.shape[1] === K && (s.w.dtype === 'f32' || s.w.dtype === 'f16'),
			() =>
				`${what}: segment ${i}'s weight must be [N, ${K}] f32 or f16; got [${s.w.shape}] ${s.w.dtype}`
		);
		assertShape(
			!s.bias || (s.bias.size === N && s.bias.dtype === 'f32'),
			() => `${what}: segment ${i}'s bias must be [${N}] f32; got [${s.bias?.shape}]`
		);
		if (s.lora) {
			const r = s.lora.b.shape[1];
			const R = s.lora.xa.size / Math.max(1, B);
			assertShape(
				s.lora.b.shape.length === 2 &&
					s.lora.b.shape[0] === N &&
					s.lora.b.dtype === 'f32' &&
					s.lora.xa.dtype === 'f32' &&
					Number.isInteger(R) &&
					s.lora.offset >= 0 &&
					s.lora.offset + r <= R,
				() =>
					`${what}: segment ${i}'s LoRA needs B [${N}, r] f32 and xa [${B}, R] f32 with ` +
					`offset + r <= R; got B [${s.lora!.b.shape}], xa [${s.lora!.xa.shape}], offset ${s.lora!.offset}`
			);
			if (!Number.isFinite(s.lora.scale))
				throw new RangeError(`${what}: LoRA scale must be finite, got ${s.lora.scale}`);
		}
		if (!args.swiglu) {
			const y = s.y;
			const off = s.yOffset ?? 0;
			assertShape(
				!!y &&
					y.dtype === 'f32' &&
					y.size % Math.max(1, B) === 0 &&
					off >= 0 &&
					off + N <= y.size / B,
				() =>
					`${what}: segment ${i} needs y [${B}, >= ${off + N}] f32; got ${y ? `[${y.shape}] ${y.dtype}` : 'none'}`
			);
		}
		n.push(N);
	}
	if (args.swiglu) {
		assertShape(
			segments.length === 2 &&
				n[0] === n[1] &&
				args.swiglu.dtype === 'f32' &&
				args.swiglu.size === B * n[0],
			() => `${what}: swiglu needs two segments (gate, up) of one N and an out [${B}, N] f32`
		);
	}
	const outs = args.swiglu ? [args.swiglu.buffer] : segments.map((s) => s.y!.buffer);
	const ins = [
		x,
		args.norm?.weight,
		...segments.flatMap((s) => [s.w, s.bias, s.lora?.xa, s.lora?.b])
	];
	assertShape(
		ins.every((t) => !t || !outs.includes(t.buffer)),
		() => `${what}: an output shares a buffer with an input`
	);
	return { B, K, n };
}

/** Splits the segments into dispatches the device can bind (and of one output kind). */
function dispatchGroups(gpu: Gpu, args: SkinnyArgs): number[][] {
	if (args.swiglu) return [[0, 1]];
	// Greedy: consecutive segments while the bindings fit (each alone always fits: <= 6).
	const groups: number[][] = [];
	let cur: number[] = [];
	for (let i = 0; i < args.segments.length; i++) {
		const next = [...cur, i];
		const kind = outputKind(args, next);
		if (
			cur.length &&
			(!kind ||
				next.length > MAX_SEGMENTS ||
				bindings(args, next, kind) > gpu.limits.maxStorageBuffersPerShaderStage)
		) {
			groups.push(cur);
			cur = [i];
		} else cur = next;
	}
	groups.push(cur);
	return groups;
}

function outputKind(args: SkinnyArgs, idx: number[]): SkinnyOutput | null {
	const set = new Set(idx.map((i) => args.segments[i].y!.buffer));
	if (set.size === 1) return 'shared';
	return set.size === idx.length ? 'each' : null;
}

function bindings(args: SkinnyArgs, idx: number[], output: SkinnyOutput): number {
	const anyLora = idx.some((i) => args.segments[i].lora);
	const per = idx.reduce((n, i) => {
		const s = args.segments[i];
		return n + 1 + +!!s.bias + +!!s.lora;
	}, 0);
	return 1 + +!!args.norm + +anyLora + per + (output === 'each' ? idx.length : 1);
}

/** y = x W^T (+ bias) (+ LoRA) (+ beta y) for every segment; see SkinnyArgs. */
export function skinnyMatmul(rec: Recorder, args: SkinnyArgs): void {
	const p = prepare(args);
	if (p.B === 0) return;
	for (const idx of dispatchGroups(rec.gpu, args)) dispatchOne(rec, args, p, idx);
}

function dispatchOne(rec: Recorder, args: SkinnyArgs, p: Prepared, idx: number[]): void {
	const gpu = rec.gpu;
	const segs = idx.map((i) => args.segments[i]);
	const output: SkinnyOutput = args.swiglu ? 'swiglu' : outputKind(args, idx)!;
	const anyF16 = segs.some((s) => s.w.dtype === 'f16');
	const vec = p.K % (anyF16 ? 8 : 4) === 0;
	const vectorWidth = vec ? (anyF16 ? 8 : 4) : 1;
	const columns = output === 'swiglu' ? p.n[idx[0]] : idx.reduce((a, i) => a + p.n[i], 0);
	const chosen = chooseTiling(gpu, {
		rows: p.B,
		k: p.K,
		columns,
		vectorWidth,
		pair: output === 'swiglu'
	});
	const tiling = { ...chosen, ...args.tiling };
	// Lanes overridden alone: keep the chosen workgroup size (and at least one subgroup).
	if (args.tiling?.lanes && !args.tiling.groups)
		tiling.groups = Math.max(
			1,
			Math.floor((chosen.lanes * chosen.groups) / tiling.lanes),
			Math.ceil(tiling.subgroup / tiling.lanes)
		);
	const v: SkinnyVariant = {
		...tiling,
		segments: segs.map((s) => ({
			w: s.w.dtype as 'f32' | 'f16',
			bias: !!s.bias,
			lora: !!s.lora
		})),
		output,
		norm: !!args.norm,
		vec
	};
	const problem = skinnyVariantProblem(v);
	if (problem) throw new ShapeMismatchError(`skinny matmul tiling: ${problem}`);
	const threads = v.lanes * v.groups;
	const wgBytes = skinnyWorkgroupFloats(v) * 4;
	if (
		threads > gpu.limits.maxComputeInvocationsPerWorkgroup ||
		wgBytes > gpu.limits.maxComputeWorkgroupStorageSize ||
		skinnyBindingCount(v) > gpu.limits.maxStorageBuffersPerShaderStage
	)
		throw new OverLimitError(
			`skinny matmul ${skinnyName(v)} needs ${threads} invocations, ${wgBytes} B of workgroup ` +
				`memory and ${skinnyBindingCount(v)} storage buffers; this device allows ` +
				`${gpu.limits.maxComputeInvocationsPerWorkgroup}, ${gpu.limits.maxComputeWorkgroupStorageSize} B ` +
				`and ${gpu.limits.maxStorageBuffersPerShaderStage}: choose a smaller tiling`
		);

	const xaTensor = segs.find((s) => s.lora)?.lora?.xa;
	assertShape(
		segs.every((s) => !s.lora || s.lora.xa.buffer === xaTensor!.buffer),
		() => 'skinny matmul: the LoRA segments of one call must share one xa tensor'
	);
	const binds: Binding[] = [args.x];
	if (args.norm) binds.push(args.norm.weight);
	if (xaTensor) binds.push(xaTensor);
	for (const s of segs) {
		binds.push(s.w);
		if (s.bias) binds.push(s.bias);
		if (s.lora) binds.push(s.lora.b);
	}
	if (output === 'each') for (const s of segs) binds.push(s.y!);
	else binds.push(args.swiglu ?? segs[0].y!);

	const params = new Params()
		.u32(p.K)
		.u32(p.B)
		.f32(args.beta ?? 0)
		.u32(xaTensor ? xaTensor.size / p.B : 0)
		.f32(args.norm?.eps ?? 0);
	let wgEnd = 0;
	const perWg = v.cols * v.groups;
	segs.forEach((s, j) => {
		const N = p.n[idx[j]];
		if (output !== 'swiglu' || j === 0) wgEnd += Math.ceil(N / perWg);
		const y = args.swiglu ?? s.y!;
		params
			.u32(N)
			.u32(wgEnd)
			.u32(y.size / p.B)
			.u32(args.swiglu ? 0 : (s.yOffset ?? 0))
			.u32(s.lora?.offset ?? 0)
			.u32(s.lora ? s.lora.b.shape[1] : 0)
			.f32(s.lora?.scale ?? 0);
	});
	rec.dispatch(kernelFor(v), binds, grid(gpu, wgEnd), params);
}
