/**
 * @file The safetensors format, written (fixtures, LoRA adapters): header JSON padded with
 * spaces to a multiple of 8 bytes (as the reference writer does, so the data region is
 * 8-byte aligned), then the tensors back to back in the order given. f32 values are
 * narrowed to F16 / BF16 with round-to-nearest-even, as torch's `.to(dtype)` does.
 */
import { f16BitsToF32, f32ToF16Bits } from '../../gpu/half';

export type WritableDType = 'F32' | 'F16' | 'BF16';

export interface TensorToWrite {
	name: string;
	dtype: WritableDType;
	shape: readonly number[];
	/** Row-major values, narrowed to `dtype` on writing. */
	data: ArrayLike<number>;
}

const BYTES: Record<WritableDType, number> = { F32: 4, F16: 2, BF16: 2 };

const scratch = new Float32Array(1);
const scratchBits = new Uint32Array(scratch.buffer);

/** f32 -> bf16 bits, round to nearest, ties to even; NaN stays a (quiet) NaN. */
export function f32ToBf16Bits(value: number): number {
	scratch[0] = value;
	const x = scratchBits[0];
	if ((x & 0x7fffffff) > 0x7f800000) return ((x >>> 16) | 0x40) & 0xffff;
	return ((x + 0x7fff + ((x >>> 16) & 1)) >>> 16) & 0xffff;
}

export function bf16BitsToF32(bits: number): number {
	scratchBits[0] = (bits & 0xffff) << 16;
	return scratch[0];
}

/** The values as they will read back after storing them as `dtype`. */
export function roundToDType(values: ArrayLike<number>, dtype: WritableDType): Float32Array {
	const out = Float32Array.from(values);
	if (dtype === 'F16')
		for (let i = 0; i < out.length; i++) out[i] = f16BitsToF32(f32ToF16Bits(out[i]));
	if (dtype === 'BF16')
		for (let i = 0; i < out.length; i++) out[i] = bf16BitsToF32(f32ToBf16Bits(out[i]));
	return out;
}

/** Serialises tensors (and optional string metadata) into one safetensors file. */
export function encodeSafetensors(
	tensors: readonly TensorToWrite[],
	metadata?: Record<string, string>
): Uint8Array<ArrayBuffer> {
	const header: Record<string, unknown> = {};
	if (metadata) header.__metadata__ = metadata;
	let offset = 0;
	for (const t of tensors) {
		const count = t.shape.reduce((a, b) => a * b, 1);
		if (count !== t.data.length)
			throw new RangeError(
				`${t.name}: shape [${t.shape}] needs ${count} values, got ${t.data.length}`
			);
		const size = count * BYTES[t.dtype];
		header[t.name] = { dtype: t.dtype, shape: [...t.shape], data_offsets: [offset, offset + size] };
		offset += size;
	}
	let json = new TextEncoder().encode(JSON.stringify(header));
	const padded = Math.ceil(json.length / 8) * 8;
	if (padded !== json.length) {
		const p = new Uint8Array(padded).fill(0x20);
		p.set(json);
		json = p;
	}
	const out = new Uint8Array(8 + json.length + offset);
	const view = new DataView(out.buffer);
	view.setUint32(0, json.length, true);
	view.setUint32(4, 0, true);
	out.set(json, 8);
	let at = 8 + json.length;
	for (const t of tensors) {
		const n = t.data.length;
		if (t.dtype === 'F32') for (let i = 0; i < n; i++) view.setFloat32(at + 4 * i, t.data[i], true);
		else {
			const narrow = t.dtype === 'F16' ? f32ToF16Bits : f32ToBf16Bits;
			for (let i = 0; i < n; i++) view.setUint16(at + 2 * i, narrow(t.data[i]), true);
		}
		at += n * BYTES[t.dtype];
	}
	return out;
}
