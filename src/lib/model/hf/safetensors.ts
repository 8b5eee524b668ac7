/**
 * @file The safetensors format, read: an 8-byte little-endian header length N, N bytes of
 * JSON {name: {dtype, shape, data_offsets}}, then the data. Validated as the reference
 * implementation does (tensors tile the data exactly, in order, to the file's end); any
 * violation is a CorruptCheckpointError naming file and tensor. Reads byte ranges (header,
 * then each tensor); F32, F16 and BF16 decode to f32.
 */
import { f16BitsToF32 } from '../../gpu/half';
import type { ByteSource } from './byte-source';
import { CorruptCheckpointError, UnsupportedDTypeError } from '../errors';
import type { WeightDType } from '../types';

/** Bytes per element of every dtype the format defines (readable or not). */
const DTYPE_BYTES: Record<string, number> = {
	BOOL: 1,
	U8: 1,
	I8: 1,
	F8_E5M2: 1,
	F8_E4M3: 1,
	I16: 2,
	U16: 2,
	F16: 2,
	BF16: 2,
	I32: 4,
	U32: 4,
	F32: 4,
	F64: 8,
	I64: 8,
	U64: 8
};

/** The dtypes this layer reads, by their safetensors names. */
export const READABLE_DTYPES: Record<string, WeightDType> = {
	F32: 'float32',
	F16: 'float16',
	BF16: 'bfloat16'
};

/** The safetensors reference implementation refuses headers over 100 MB. */
export const MAX_HEADER_BYTES = 100_000_000;

export interface SafetensorsTensor {
	name: string;
	/** The safetensors dtype name ('F32', 'BF16', ...). */
	dtype: string;
	shape: number[];
	/** Byte offsets of the tensor in the file (not in the data region). */
	begin: number;
	end: number;
}

export interface SafetensorsHeader {
	file: string;
	/** 8 + N: where the data region starts. */
	dataOffset: number;
	/** The file size the header implies: dataOffset + the last tensor's end. */
	declaredSize: number;
	tensors: Map<string, SafetensorsTensor>;
	metadata: Record<string, string>;
}

/** N from the first 8 bytes, checked against the file size when known. */
export function headerLength(first8: Uint8Array, file: string, fileSize?: number): number {
	if (first8.length < 8 || (fileSize !== undefined && fileSize < 8))
		throw new CorruptCheckpointError(
			file,
			`the file is ${fileSize ?? first8.length} bytes, shorter than the 8-byte header length`
		);
	const view = new DataView(first8.buffer, first8.byteOffset, 8);
	const lo = view.getUint32(0, true);
	const hi = view.getUint32(4, true);
	const n = hi * 2 ** 32 + lo;
	if (n > MAX_HEADER_BYTES || n < 2)
		throw new CorruptCheckpointError(
			file,
			`header length ${n} is not plausible (the format allows 2..${MAX_HEADER_BYTES}); ` +
				'this is not a safetensors file'
		);
	if (fileSize !== undefined && 8 + n > fileSize)
		throw new CorruptCheckpointError(
			file,
			`header length ${n} runs past the end of the file (${fileSize} bytes): truncated`
		);
	return n;
}

function isNonNegInt(v: unknown): v is number {
	return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

/**
 * Parses and validates the header from the file's first 8 + N bytes (more is fine).
 * `fileSize` (when known) checks that the data region ends exactly at the end of the file;
 * without it, compare `declaredSize` with the bytes that arrive.
 */
export function parseSafetensorsHeader(
	bytes: Uint8Array,
	file: string,
	fileSize?: number
): SafetensorsHeader {
	const n = headerLength(bytes, file, fileSize);
	if (bytes.length < 8 + n)
		throw new CorruptCheckpointError(file, `only ${bytes.length} of ${8 + n} header bytes given`);
	let json: unknown;
	try {
		json = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(8, 8 + n)));
	} catch (error) {
		throw new CorruptCheckpointError(file, `the header is not valid JSON (${String(error)})`);
	}
	if (json === null || typeof json !== 'object' || Array.isArray(json))
		throw new CorruptCheckpointError(file, 'the header is not a JSON object');

	const dataOffset = 8 + n;
	const tensors = new Map<string, SafetensorsTensor>();
	let metadata: Record<string, string> = {};
	for (const [name, entry] of Object.entries(json as Record<string, unknown>)) {
		if (name === '__metadata__') {
			if (
				entry === null ||
				typeof entry !== 'object' ||
				Object.values(entry).some((v) => typeof v !== 'string')
			)
				throw new CorruptCheckpointError(file, '__metadata__ must map strings to strings');
			metadata = entry as Record<string, string>;
			continue;
		}
		const e = entry as { dtype?: unknown; shape?: unknown; data_offsets?: unknown } | null;
		if (e === null || typeof e !== 'object')
			throw new CorruptCheckpointError(file, 'the entry is not an object', name);
		if (typeof e.dtype !== 'string')
			throw new CorruptCheckpointError(file, 'the entry has no dtype', name);
		if (!Object.hasOwn(DTYPE_BYTES, e.dtype)) throw new UnsupportedDTypeError(file, name, e.dtype);
		if (!Array.isArray(e.shape) || !e.shape.every(isNonNegInt))
			throw new CorruptCheckpointError(
				file,
				`shape ${JSON.stringify(e.shape)} is not a list of non-negative integers`,
				name
			);
		const offs = e.data_offsets;
		if (!Array.isArray(offs) || offs.length !== 2 || !offs.every(isNonNegInt) || offs[0] > offs[1])
			throw new CorruptCheckpointError(
				file,
				`data_offsets ${JSON.stringify(offs)} is not [begin, end] with 0 <= begin <= end`,
				name
			);
		const shape = e.shape as number[];
		const need = shape.reduce((a, b) => a * b, 1) * DTYPE_BYTES[e.dtype];
		const has = offs[1] - offs[0];
		if (has !== need)
			throw new CorruptCheckpointError(
				file,
				`data_offsets [${offs}] hold ${has} bytes but ${e.dtype} [${shape}] needs ${need}`,
				name
			);
		tensors.set(name, {
			name,
			dtype: e.dtype,
			shape,
			begin: dataOffset + offs[0],
			end: dataOffset + offs[1]
		});
	}

	// The tensors must tile the data region: sorted by offset, each starts where the last ended.
	const ordered = [...tensors.values()].sort((a, b) => a.begin - b.begin || a.end - b.end);
	let cursor = dataOffset;
	for (const t of ordered) {
		if (t.begin < cursor)
			throw new CorruptCheckpointError(
				file,
				`data_offsets [${t.begin - dataOffset}, ${t.end - dataOffset}] overlap the ` +
					`previous tensor (which ends at ${cursor - dataOffset})`,
				t.name
			);
		if (t.begin > cursor)
			throw new CorruptCheckpointError(
				file,
				`data_offsets start at ${t.begin - dataOffset}, leaving a gap of ` +
					`${t.begin - cursor} bytes after the previous tensor`,
				t.name
			);
		cursor = t.end;
	}
	if (fileSize !== undefined) {
		const last = ordered[ordered.length - 1];
		if (cursor > fileSize)
			throw new CorruptCheckpointError(
				file,
				`the data runs to byte ${cursor} but the file has ${fileSize}: truncated`,
				last?.name
			);
		if (cursor < fileSize)
			throw new CorruptCheckpointError(
				file,
				`${fileSize - cursor} bytes follow the last tensor that no header entry accounts for`
			);
	}
	return { file, dataOffset, declaredSize: cursor, tensors, metadata };
}

/** Reads and validates the header of a safetensors file through `source`. */
export async function readSafetensorsHeader(
	source: ByteSource,
	file: string
): Promise<SafetensorsHeader> {
	const first = await source.read(0, Math.min(8, source.size));
	const n = headerLength(first, file, source.size);
	return parseSafetensorsHeader(await source.read(0, 8 + n), file, source.size);
}

/** The tensor's entry, or an UnsupportedDTypeError if it is not F32/F16/BF16. */
export function readableDType(header: SafetensorsHeader, t: SafetensorsTensor): WeightDType {
	if (!Object.hasOwn(READABLE_DTYPES, t.dtype))
		throw new UnsupportedDTypeError(header.file, t.name, t.dtype);
	return READABLE_DTYPES[t.dtype];
}

let f16Table: Float32Array | undefined;
/** All 65536 f16 values as f32 (256 KB, built once): decoding is a lookup per element. */
function f16ToF32Table(): Float32Array {
	if (!f16Table) {
		f16Table = new Float32Array(65536);
		for (let i = 0; i < 65536; i++) f16Table[i] = f16BitsToF32(i);
	}
	return f16Table;
}

/** A Uint16Array over the bytes (copied first when they are not 2-byte aligned). */
function u16(bytes: Uint8Array): Uint16Array {
	const b = bytes.byteOffset % 2 === 0 ? bytes : bytes.slice();
	return new Uint16Array(b.buffer, b.byteOffset, b.length >> 1);
}

/** Decodes raw tensor bytes of a readable dtype to a fresh f32 array. */
export function decodeToF32(bytes: Uint8Array, dtype: WeightDType): Float32Array {
	if (dtype === 'float32') {
		const copy = bytes.slice();
		return new Float32Array(copy.buffer, 0, copy.length >> 2);
	}
	const bits = u16(bytes);
	const out = new Float32Array(bits.length);
	if (dtype === 'bfloat16') {
		// bf16 is the top half of an f32: widening is a 16-bit shift.
		const outBits = new Uint32Array(out.buffer);
		for (let i = 0; i < bits.length; i++) outBits[i] = bits[i] << 16;
	} else {
		const table = f16ToF32Table();
		for (let i = 0; i < bits.length; i++) out[i] = table[bits[i]];
	}
	return out;
}

/** A fresh copy of raw f16 tensor bytes as bits. */
export function decodeF16Bits(bytes: Uint8Array): Uint16Array {
	return u16(bytes).slice();
}

/** Bytes per element of a safetensors dtype name (undefined if not one). */
export function dtypeBytes(dtype: string): number | undefined {
	return Object.hasOwn(DTYPE_BYTES, dtype) ? DTYPE_BYTES[dtype] : undefined;
}
