/**
 * @file Which dtype each frozen weight (projections, embedding, lm_head) is kept in, and
 * the host conversion to f16 with its check. 'auto': f16-stored stays f16, bf16 becomes f16
 * when max |x - f16(x)| / max |x| <= 1e-3 (else f32), f32 stays f32; 'f16' and 'f32' force.
 * Norms and biases stay f32. f16 on every device: kernels read f16 as u32 words where
 * `shader-f16` is missing and compute in f32, so results equal f32 weights of those values.
 */
import { f16BitsToF32, f32ToF16Bits } from '../../gpu/half';
import type { ModelConfig, StoredTensorInfo, WeightDType } from '../types';
import { weightSpecs } from './weight-spec';

export type WeightDtypePolicy = 'auto' | 'f32' | 'f16';
export const WEIGHT_DTYPE_POLICIES: readonly WeightDtypePolicy[] = ['auto', 'f32', 'f16'];

/** The dtypes weights are kept in on the GPU. */
export type GpuWeightDType = 'f32' | 'f16';

/** Tensor name -> the dtype it is (or is planned to be) kept in on the GPU. */
export type WeightDtypes = Readonly<Record<string, GpuWeightDType>>;

/** The largest relative error (max |x - f16(x)| / max |x|) 'auto' accepts for bf16 -> f16. */
export const F16_MAX_RELATIVE_ERROR = 1e-3;

/** Throws a RangeError unless `policy` is one of WEIGHT_DTYPE_POLICIES. */
export function checkWeightDtypePolicy(policy: unknown): WeightDtypePolicy {
	if (!WEIGHT_DTYPE_POLICIES.includes(policy as WeightDtypePolicy))
		throw new RangeError(
			`weightDtype must be one of ${WEIGHT_DTYPE_POLICIES.join(', ')}; got ${String(policy)}`
		);
	return policy as WeightDtypePolicy;
}

/** The tensors that may be kept f16: projections' weights, the embedding, the lm_head. */
export function mayBeF16(name: string): boolean {
	return (
		name === 'model.embed_tokens.weight' ||
		name === 'lm_head.weight' ||
		name.endsWith('_proj.weight')
	);
}

/** A tensor's dtype as planned from its stored dtype alone, before its values are read
 * (the check may still keep a bf16 tensor in f32). */
export function plannedDtype(
	name: string,
	stored: WeightDType,
	policy: WeightDtypePolicy = 'auto'
): GpuWeightDType {
	if (!mayBeF16(name) || policy === 'f32') return 'f32';
	if (policy === 'f16') return 'f16';
	return stored === 'float16' || stored === 'bfloat16' ? 'f16' : 'f32';
}

/** Every tensor `config` needs, with its planned dtype. `stored`: the source's tensors
 * (WeightSource.list()); a tensor missing there is taken as stored in config.dtype. */
export function planWeightDtypes(
	config: ModelConfig,
	policy: WeightDtypePolicy = 'auto',
	stored: readonly StoredTensorInfo[] = []
): Record<string, GpuWeightDType> {
	checkWeightDtypePolicy(policy);
	const byName = new Map(stored.map((t) => [t.name, t.dtype]));
	const out: Record<string, GpuWeightDType> = {};
	for (const { name } of weightSpecs(config))
		out[name] = plannedDtype(name, byName.get(name) ?? config.dtype, policy);
	return out;
}

export interface F16Conversion {
	/** The values as f16 bits, row-major. */
	bits: Uint16Array;
	/** max |x - f16(x)| / max |x| over finite x (0 for an all-zero tensor; Infinity when a
	 * finite value overflows f16). */
	relativeError: number;
}

interface Bf16Tables {
	/** bf16 bits -> f16 bits, rounded to nearest even. */
	toF16: Uint16Array;
	/** |x - f16(x)| (Infinity on overflow), 0 for non-finite x. */
	error: Float32Array;
	/** |x|, 0 for non-finite x. */
	abs: Float32Array;
}

let bf16Tables: Bf16Tables | undefined;
/** Built once (640 KB): converting a tensor is then three lookups per element. */
function tablesForBf16(): Bf16Tables {
	if (bf16Tables) return bf16Tables;
	const toF16 = new Uint16Array(65536);
	const error = new Float32Array(65536);
	const abs = new Float32Array(65536);
	const f = new Float32Array(1);
	const u = new Uint32Array(f.buffer);
	for (let b = 0; b < 65536; b++) {
		u[0] = b << 16; // bf16 is the top half of an f32
		const x = f[0];
		const h = f32ToF16Bits(x);
		toF16[b] = h;
		if (Number.isFinite(x)) {
			error[b] = Math.abs(x - f16BitsToF32(h));
			abs[b] = Math.abs(x);
		}
	}
	return (bf16Tables = { toF16, error, abs });
}

/** bf16 bits (as stored) -> f16 bits, with the relative error of the conversion. */
export function bf16BitsToF16(bits: Uint16Array): F16Conversion {
	const { toF16, error, abs } = tablesForBf16();
	const out = new Uint16Array(bits.length);
	let maxError = 0;
	let maxAbs = 0;
	for (let i = 0; i < bits.length; i++) {
		const b = bits[i];
		out[i] = toF16[b];
		if (error[b] > maxError) maxError = error[b];
		if (abs[b] > maxAbs) maxAbs = abs[b];
	}
	return { bits: out, relativeError: relativeError(maxError, maxAbs) };
}

let f16Table: Float32Array | undefined;
function f16ToF32(bits: number): number {
	if (!f16Table) {
		f16Table = new Float32Array(65536);
		for (let i = 0; i < 65536; i++) f16Table[i] = f16BitsToF32(i);
	}
	return f16Table[bits];
}

/** f32 values -> f16 bits (nearest even), with the relative error of the conversion. */
export function f32ToF16(values: ArrayLike<number>): F16Conversion {
	const out = new Uint16Array(values.length);
	let maxError = 0;
	let maxAbs = 0;
	for (let i = 0; i < values.length; i++) {
		const x = values[i];
		const h = f32ToF16Bits(x);
		out[i] = h;
		if (!Number.isFinite(x)) continue;
		const e = Math.abs(x - f16ToF32(h));
		if (e > maxError) maxError = e;
		if (Math.abs(x) > maxAbs) maxAbs = Math.abs(x);
	}
	return { bits: out, relativeError: relativeError(maxError, maxAbs) };
}

function relativeError(maxError: number, maxAbs: number): number {
	if (maxError === 0) return 0;
	return maxAbs === 0 ? Infinity : maxError / maxAbs;
}
