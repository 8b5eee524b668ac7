/**
 * @file Random access to a file's bytes without holding it whole: a safetensors header is
 * parsed from the first bytes, then each tensor is read as its own byte range. Sources over
 * memory and Blobs live here (both runtimes); Node files in node-checkpoint.ts, HTTP ranges
 * in url-checkpoint.ts.
 */

export interface ByteSource {
	/** Total size in bytes. */
	readonly size: number;
	/** Exactly `length` bytes from `offset` (a fresh array the caller may keep). */
	read(offset: number, length: number): Promise<Uint8Array>;
}

/** Throws unless [offset, offset + length) lies within [0, size). */
export function checkRange(offset: number, length: number, size: number, what: string): void {
	if (
		!Number.isSafeInteger(offset) ||
		!Number.isSafeInteger(length) ||
		offset < 0 ||
		length < 0 ||
		offset + length > size
	)
		throw new RangeError(`${what}: bytes [${offset}, ${offset + length}) outside [0, ${size})`);
}

/** A source over bytes already in memory. */
export function memoryByteSource(bytes: Uint8Array): ByteSource {
	return {
		size: bytes.length,
		async read(offset, length) {
			checkRange(offset, length, bytes.length, 'memoryByteSource');
			return bytes.slice(offset, offset + length);
		}
	};
}

/** A source over a Blob (a Cache API response body, a downloaded file): slices are lazy. */
export function blobByteSource(blob: Blob): ByteSource {
	return {
		size: blob.size,
		async read(offset, length) {
			checkRange(offset, length, blob.size, 'blobByteSource');
			return new Uint8Array(await blob.slice(offset, offset + length).arrayBuffer());
		}
	};
}
