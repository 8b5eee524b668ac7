/**
 * @file A WeightSource over one or more safetensors files (a single model.safetensors or
 * the shards an index names). The tensor index is built from the headers alone, so the
 * checkpoint can be validated against config.json before any data is read or downloaded;
 * the byte sources are attached afterwards.
 */
import type { ByteSource } from './byte-source';
import { CorruptCheckpointError, WeightsMismatchError } from '../errors';
import {
	decodeF16Bits,
	decodeToF32,
	readableDType,
	READABLE_DTYPES,
	type SafetensorsHeader,
	type SafetensorsTensor
} from './safetensors';
import type { StoredTensorInfo, WeightSource } from '../types';

export interface IndexedTensor {
	tensor: SafetensorsTensor;
	header: SafetensorsHeader;
}

/** name -> (tensor, its file's header), over all files; a name in two files is corrupt. */
export function indexTensors(headers: readonly SafetensorsHeader[]): Map<string, IndexedTensor> {
	const index = new Map<string, IndexedTensor>();
	for (const header of headers)
		for (const tensor of header.tensors.values()) {
			const other = index.get(tensor.name);
			if (other)
				throw new CorruptCheckpointError(
					header.file,
					`the tensor is also stored in '${other.header.file}'`,
					tensor.name
				);
			index.set(tensor.name, { tensor, header });
		}
	return index;
}

export class SafetensorsWeights implements WeightSource {
	readonly index: Map<string, IndexedTensor>;

	/** `sources` maps each header's file name to its bytes. */
	constructor(
		readonly headers: readonly SafetensorsHeader[],
		private readonly sources: ReadonlyMap<string, ByteSource>
	) {
		this.index = indexTensors(headers);
		for (const h of headers)
			if (!sources.has(h.file)) throw new RangeError(`SafetensorsWeights: no source for ${h.file}`);
	}

	/** Tensors in a readable dtype (F32, F16, BF16), in file order. */
	list(): StoredTensorInfo[] {
		const out: StoredTensorInfo[] = [];
		for (const { tensor } of this.index.values())
			if (Object.hasOwn(READABLE_DTYPES, tensor.dtype))
				out.push({
					name: tensor.name,
					dtype: READABLE_DTYPES[tensor.dtype],
					shape: [...tensor.shape]
				});
		return out;
	}

	has(name: string): boolean {
		return this.index.has(name);
	}

	private entry(name: string): IndexedTensor {
		const e = this.index.get(name);
		if (!e) throw new WeightsMismatchError([name], []);
		return e;
	}

	/** The tensor's bytes as stored, or a range of them (byte offsets within the tensor). */
	async readBytes(name: string, start = 0, length?: number): Promise<Uint8Array> {
		const { tensor, header } = this.entry(name);
		const size = tensor.end - tensor.begin;
		const len = length ?? size - start;
		if (start < 0 || len < 0 || start + len > size)
			throw new RangeError(
				`${name}: bytes [${start}, ${start + len}) outside the tensor's ${size}`
			);
		return this.sources.get(header.file)!.read(tensor.begin + start, len);
	}

	async readF32(name: string): Promise<Float32Array> {
		const { tensor, header } = this.entry(name);
		const dtype = readableDType(header, tensor);
		return decodeToF32(await this.readBytes(name), dtype);
	}

	/** Rows [rowStart, rowStart + rowCount) of a 2-D (or higher) tensor, widened to f32. */
	async readF32Rows(name: string, rowStart: number, rowCount: number): Promise<Float32Array> {
		const { tensor, header } = this.entry(name);
		const dtype = readableDType(header, tensor);
		const rows = tensor.shape[0] ?? 1;
		if (!(rowStart >= 0 && rowCount >= 0 && rowStart + rowCount <= rows))
			throw new RangeError(
				`${name}: rows [${rowStart}, ${rowStart + rowCount}) outside [0, ${rows})`
			);
		const rowBytes = rows === 0 ? 0 : (tensor.end - tensor.begin) / rows;
		return decodeToF32(await this.readBytes(name, rowStart * rowBytes, rowCount * rowBytes), dtype);
	}

	/** The raw f16 bits of a tensor stored as F16 (RangeError for other dtypes). */
	async readF16Bits(name: string): Promise<Uint16Array> {
		const { tensor, header } = this.entry(name);
		if (readableDType(header, tensor) !== 'float16')
			throw new RangeError(`${name} is stored as ${tensor.dtype}, not F16; use readF32`);
		return decodeF16Bits(await this.readBytes(name));
	}

	/** The raw bf16 bits of a tensor stored as BF16 (RangeError for other dtypes). */
	async readBf16Bits(name: string): Promise<Uint16Array> {
		const { tensor, header } = this.entry(name);
		if (readableDType(header, tensor) !== 'bfloat16')
			throw new RangeError(`${name} is stored as ${tensor.dtype}, not BF16; use readF32`);
		return decodeF16Bits(await this.readBytes(name)); // the same 16-bit copy
	}
}
