/**
 * @file The parity check's expected values: a safetensors file (as safetensors.torch
 * save_file writes it) of F64, F32 and I64 tensors, read whole into f64 arrays. The model
 * layer reads only F32/F16/BF16 weights; this reader uses its header parser and validation
 * and decodes the wider dtypes itself. `encodeExpected` writes the same format (tests).
 */
import { memoryByteSource } from '../../src/lib/model/hf/byte-source';
import { readSafetensorsHeader } from '../../src/lib/model/hf/safetensors';

export interface ExpectedTensor {
	shape: number[];
	data: Float64Array;
}

function decode(bytes: Uint8Array, dtype: string, name: string): Float64Array {
	const b = new Uint8Array(bytes); // an aligned copy (a Node Buffer's slice() would not copy)
	switch (dtype) {
		case 'F64':
			return new Float64Array(b.buffer, 0, b.length / 8);
		case 'F32':
			return Float64Array.from(new Float32Array(b.buffer, 0, b.length / 4));
		case 'I64':
			return Float64Array.from(new BigInt64Array(b.buffer, 0, b.length / 8), (v) => Number(v));
		case 'I32':
			return Float64Array.from(new Int32Array(b.buffer, 0, b.length / 4));
		default:
			throw new Error(
				`expected values: tensor '${name}' has dtype ${dtype} (F64/F32/I64/I32 only)`
			);
	}
}

/** Every tensor of the file, by name, as f64. */
export async function readExpected(
	bytes: Uint8Array,
	file = 'expected.safetensors'
): Promise<Map<string, ExpectedTensor>> {
	const source = memoryByteSource(bytes);
	const header = await readSafetensorsHeader(source, file);
	const out = new Map<string, ExpectedTensor>();
	for (const t of header.tensors.values())
		out.set(t.name, {
			shape: [...t.shape],
			data: decode(bytes.subarray(t.begin, t.end), t.dtype, t.name)
		});
	return out;
}

export interface ExpectedToWrite {
	name: string;
	dtype: 'F64' | 'I64';
	shape: number[];
	data: ArrayLike<number>;
}

/** A safetensors file of F64 / I64 tensors (header padded to 8 bytes, as the reference writer). */
export function encodeExpected(tensors: readonly ExpectedToWrite[]): Uint8Array {
	const header: Record<string, unknown> = {};
	let offset = 0;
	for (const t of tensors) {
		const n = t.shape.reduce((a, b) => a * b, 1);
		if (n !== t.data.length)
			throw new RangeError(`${t.name}: shape [${t.shape}] vs ${t.data.length}`);
		header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + 8 * n] };
		offset += 8 * n;
	}
	let json = JSON.stringify(header);
	json += ' '.repeat((8 - (json.length % 8)) % 8);
	const jsonBytes = new TextEncoder().encode(json);
	const out = new Uint8Array(8 + jsonBytes.length + offset);
	const view = new DataView(out.buffer);
	view.setBigUint64(0, BigInt(jsonBytes.length), true);
	out.set(jsonBytes, 8);
	let at = 8 + jsonBytes.length;
	for (const t of tensors)
		for (let i = 0; i < t.data.length; i++, at += 8)
			if (t.dtype === 'F64') view.setFloat64(at, t.data[i], true);
			else view.setBigInt64(at, BigInt(t.data[i]), true);
	return out;
}
