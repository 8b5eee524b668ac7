/**
 * safetensors: writer -> reader round trips for F32 / F16 / BF16 (exact, against the values
 * rounded the way torch rounds), range reads, and every malformed file as its typed error
 * naming the file and the tensor.
 */
import { describe, expect, it } from 'vitest';
import { blobByteSource, memoryByteSource } from '../../../../src/lib/model/hf/byte-source';
import { CorruptCheckpointError, UnsupportedDTypeError } from '../../../../src/lib/model/errors';
import { f16BitsToF32, f32ToF16Bits } from '../../../../src/lib/gpu/half';
import {
	bf16BitsToF32,
	encodeSafetensors,
	f32ToBf16Bits,
	roundToDType,
	type WritableDType
} from '../../../../src/lib/model/hf/safetensors-writer';
import {
	parseSafetensorsHeader,
	readSafetensorsHeader
} from '../../../../src/lib/model/hf/safetensors';
import { SafetensorsWeights } from '../../../../src/lib/model/hf/safetensors-weights';

const SPECIAL = [0, -0, 1, -2.5, 0.1, 65504, 65520, 1e-8, 6e-5, 3e38, -Infinity, Infinity, NaN];

function values(n: number, seed: number): Float32Array {
	const out = new Float32Array(n);
	let s = seed;
	for (let i = 0; i < n; i++) {
		s = (s * 1103515245 + 12345) >>> 0;
		out[i] = ((s / 2 ** 32) * 2 - 1) * 10 ** ((i % 7) - 3);
	}
	out.set(SPECIAL.slice(0, Math.min(n, SPECIAL.length)));
	return out;
}

async function open(bytes: Uint8Array, file = 'model.safetensors') {
	const source = memoryByteSource(bytes);
	const header = await readSafetensorsHeader(source, file);
	return { header, weights: new SafetensorsWeights([header], new Map([[file, source]])) };
}

/** Exact equality that treats NaN as equal to NaN and tells -0 from 0. */
function expectSameFloats(a: Float32Array, b: Float32Array) {
	expect(a.length).toBe(b.length);
	for (let i = 0; i < a.length; i++)
		expect(Object.is(a[i], b[i]), `index ${i}: ${a[i]} vs ${b[i]}`).toBe(true);
}

describe('safetensors round trip', () => {
	for (const dtype of ['F32', 'F16', 'BF16'] as WritableDType[]) {
		it(`${dtype}: values read back exactly as rounded on writing`, async () => {
			const a = values(6 * 7, 1);
			const b = values(5, 2);
			const c = values(2 * 3 * 4, 3);
			const bytes = encodeSafetensors(
				[
					{ name: 'a', dtype, shape: [6, 7], data: a },
					{ name: 'b.bias', dtype, shape: [5], data: b },
					{ name: 'c', dtype, shape: [2, 3, 4], data: c },
					{ name: 'empty', dtype, shape: [0, 3], data: [] }
				],
				{ format: 'pt' }
			);
			const { header, weights } = await open(bytes);
			expect(header.metadata).toEqual({ format: 'pt' });
			expect(header.declaredSize).toBe(bytes.length);
			expect(header.dataOffset % 8).toBe(0);
			const dt = { F32: 'float32', F16: 'float16', BF16: 'bfloat16' }[dtype];
			expect(weights.list()).toEqual([
				{ name: 'a', dtype: dt, shape: [6, 7] },
				{ name: 'b.bias', dtype: dt, shape: [5] },
				{ name: 'c', dtype: dt, shape: [2, 3, 4] },
				{ name: 'empty', dtype: dt, shape: [0, 3] }
			]);
			expectSameFloats(await weights.readF32('a'), roundToDType(a, dtype));
			expectSameFloats(await weights.readF32('b.bias'), roundToDType(b, dtype));
			expectSameFloats(await weights.readF32('c'), roundToDType(c, dtype));
			expect((await weights.readF32('empty')).length).toBe(0);
			// Rows 2..4 of a, read as a byte range.
			expectSameFloats(await weights.readF32Rows('a', 2, 3), roundToDType(a, dtype).slice(14, 35));
			if (dtype === 'F16') {
				const bits = await weights.readF16Bits('a');
				expect(Array.from(bits)).toEqual(Array.from(a, (x) => f32ToF16Bits(x)));
			} else await expect(weights.readF16Bits('a')).rejects.toThrow(RangeError);
		});
	}

	it('narrows like torch: f16 and bf16 round to nearest even, overflow to inf', () => {
		// 1 + 2^-8 lies halfway between bf16 neighbours 1 and 1 + 2^-7: ties go to even (1).
		expect(bf16BitsToF32(f32ToBf16Bits(1 + 2 ** -8))).toBe(1);
		expect(bf16BitsToF32(f32ToBf16Bits(1 + 3 * 2 ** -8))).toBe(1 + 2 ** -6);
		expect(bf16BitsToF32(f32ToBf16Bits(3.4e38))).toBe(Infinity);
		expect(Number.isNaN(bf16BitsToF32(f32ToBf16Bits(NaN)))).toBe(true);
		expect(f16BitsToF32(f32ToF16Bits(65520))).toBe(Infinity);
		expect(Array.from(roundToDType([0.1], 'BF16'))).toEqual([0.10009765625]);
	});

	it('decodes F32 when the data region is not 4-byte aligned (header not padded)', async () => {
		const json = JSON.stringify({ x: { dtype: 'F32', shape: [3], data_offsets: [0, 12] } });
		expect((8 + json.length) % 4).not.toBe(0);
		const data = new Float32Array([1.5, -2, 3.25]);
		const bytes = rawFile(json, new Uint8Array(data.buffer));
		const { weights } = await open(bytes);
		expect(Array.from(await weights.readF32('x'))).toEqual([1.5, -2, 3.25]);
	});

	it('reads through a Blob source the same as through memory', async () => {
		const bytes = encodeSafetensors([
			{ name: 'w', dtype: 'BF16', shape: [4, 4], data: values(16, 9) }
		]);
		const source = blobByteSource(new Blob([bytes]));
		const header = await readSafetensorsHeader(source, 'm.safetensors');
		const w = new SafetensorsWeights([header], new Map([['m.safetensors', source]]));
		expectSameFloats(await w.readF32('w'), roundToDType(values(16, 9), 'BF16'));
		await expect(source.read(10, bytes.length)).rejects.toThrow(RangeError);
	});
});

/** A file from a header (object or raw text) and a data region. */
function rawFile(
	header: object | string,
	data: Uint8Array | number,
	lengthField?: number
): Uint8Array {
	const json = new TextEncoder().encode(
		typeof header === 'string' ? header : JSON.stringify(header)
	);
	const body = typeof data === 'number' ? new Uint8Array(data) : data;
	const out = new Uint8Array(8 + json.length + body.length);
	const view = new DataView(out.buffer);
	view.setUint32(0, lengthField ?? json.length, true);
	out.set(json, 8);
	out.set(body, 8 + json.length);
	return out;
}

const t = (dtype: string, shape: number[], begin: number, end: number) => ({
	dtype,
	shape,
	data_offsets: [begin, end]
});

describe('safetensors: malformed files', () => {
	async function expectCorrupt(bytes: Uint8Array, message: RegExp, tensor?: string) {
		const err = await readSafetensorsHeader(memoryByteSource(bytes), 'shard-3.safetensors').catch(
			(e: unknown) => e
		);
		expect(err).toBeInstanceOf(CorruptCheckpointError);
		const e = err as CorruptCheckpointError;
		expect(e.kind).toBe('corrupt-checkpoint');
		expect(e.message).toMatch(message);
		expect(e.message).toContain("'shard-3.safetensors'");
		expect(e.file).toBe('shard-3.safetensors');
		if (tensor !== undefined) {
			expect(e.tensor).toBe(tensor);
			expect(e.message).toContain(`'${tensor}'`);
		}
	}

	const good = { w: t('F32', [2, 2], 0, 16), b: t('F32', [2], 16, 24) };

	it('the baseline file is valid', async () => {
		await expect(
			readSafetensorsHeader(memoryByteSource(rawFile(good, 24)), 'x')
		).resolves.toBeTruthy();
	});

	it('too short for the length field', async () => {
		await expectCorrupt(new Uint8Array(5), /shorter than the 8-byte/);
	});

	it('header length beyond the file (truncated header)', async () => {
		const bytes = rawFile(good, 24);
		await expectCorrupt(bytes.slice(0, 40), /runs past the end of the file/);
		await expectCorrupt(rawFile(good, 24, 5000), /runs past the end/);
	});

	it('absurd header length (not a safetensors file)', async () => {
		const bytes = new TextEncoder().encode('<!DOCTYPE html><html>not found</html>');
		await expectCorrupt(bytes, /not plausible/);
	});

	it('header that is not JSON, not an object, or not UTF-8', async () => {
		await expectCorrupt(rawFile('{"w": {"dtype": "F32", "shape": [2', 0), /not valid JSON/);
		await expectCorrupt(rawFile('[1, 2, 3]', 0), /not a JSON object/);
		const bad = rawFile('{"\u00e9": 1}', 0);
		bad[10] = 0xff; // an invalid UTF-8 byte inside the key
		await expectCorrupt(bad, /not valid JSON/);
	});

	it('entries with missing or malformed fields, naming the tensor', async () => {
		await expectCorrupt(rawFile({ w: { shape: [1], data_offsets: [0, 4] } }, 4), /no dtype/, 'w');
		await expectCorrupt(rawFile({ w: t('F32', [-1], 0, 4) }, 4), /shape/, 'w');
		await expectCorrupt(rawFile({ w: t('F32', [1.5], 0, 4) }, 4), /shape/, 'w');
		await expectCorrupt(rawFile({ w: t('F32', [1], 4, 0) }, 4), /data_offsets/, 'w');
		await expectCorrupt(
			rawFile({ w: { dtype: 'F32', shape: [1], data_offsets: [0] } }, 4),
			/data_offsets/,
			'w'
		);
		await expectCorrupt(rawFile({ w: 7 }, 0), /not an object/, 'w');
		await expectCorrupt(rawFile({ __metadata__: { a: 1 }, ...good }, 24), /__metadata__/);
	});

	it('byte length that does not match shape x dtype size', async () => {
		await expectCorrupt(
			rawFile({ w: t('F32', [2, 2], 0, 12), b: t('F32', [2], 12, 20) }, 20),
			/hold 12 bytes but F32 \[2,2\] needs 16/,
			'w'
		);
		await expectCorrupt(rawFile({ h: t('BF16', [3], 0, 12) }, 12), /needs 6/, 'h');
	});

	it('offsets that overlap, leave a gap, or are out of order and lie', async () => {
		await expectCorrupt(
			rawFile({ w: t('F32', [2, 2], 0, 16), b: t('F32', [2], 8, 16) }, 16),
			/overlap/,
			'b'
		);
		await expectCorrupt(
			rawFile({ w: t('F32', [2, 2], 0, 16), b: t('F32', [2], 20, 28) }, 28),
			/gap of 4 bytes/,
			'b'
		);
		// Listed out of order but tiling the region: fine (JSON objects are unordered).
		const reordered = rawFile({ b: t('F32', [2], 16, 24), w: t('F32', [2, 2], 0, 16) }, 24);
		await expect(readSafetensorsHeader(memoryByteSource(reordered), 'x')).resolves.toBeTruthy();
		await expectCorrupt(rawFile({ b: t('F32', [2], 8, 16) }, 16), /gap of 8 bytes/, 'b');
	});

	it('offsets out of the data region (truncated data) or bytes no tensor accounts for', async () => {
		const whole = rawFile(good, 24);
		await expectCorrupt(whole.slice(0, whole.length - 3), /truncated/, 'b');
		await expectCorrupt(rawFile(good, 30), /6 bytes follow the last tensor/);
	});

	it('unknown dtype: refused at parse, naming dtype and tensor', async () => {
		const bytes = rawFile({ q: t('Q4_K', [4], 0, 4) }, 4);
		const err = await readSafetensorsHeader(memoryByteSource(bytes), 'q.safetensors').catch(
			(e) => e
		);
		expect(err).toBeInstanceOf(UnsupportedDTypeError);
		expect(err.message).toMatch(/'q'.*'q\.safetensors'.*'Q4_K'/);
	});

	it('a format dtype this layer cannot read (I64): listed out, refused on read', async () => {
		const bytes = rawFile({ ids: t('I64', [2], 0, 16), w: t('F32', [1], 16, 20) }, 20);
		const { weights } = await open(bytes, 'ids.safetensors');
		expect(weights.list().map((x) => x.name)).toEqual(['w']);
		const err = await weights.readF32('ids').catch((e) => e);
		expect(err).toBeInstanceOf(UnsupportedDTypeError);
		expect(err.kind).toBe('unsupported-dtype');
		expect(err.message).toMatch(/'ids'.*'ids\.safetensors'.*'I64'/);
	});

	it('parseSafetensorsHeader without a known file size checks what it can', () => {
		const bytes = rawFile(good, 24);
		const header = parseSafetensorsHeader(bytes.subarray(0, bytes.length - 24), 'x');
		expect(header.declaredSize).toBe(bytes.length);
		expect(() => parseSafetensorsHeader(bytes.subarray(0, 20), 'x')).toThrow(
			CorruptCheckpointError
		);
	});

	it('reading a tensor that is not there is a typed error', async () => {
		const { weights } = await open(rawFile(good, 24));
		await expect(weights.readF32('nope')).rejects.toMatchObject({ kind: 'weights-mismatch' });
	});
});
