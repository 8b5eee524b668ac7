/**
 * @file Node only (imports node:fs): a model folder on disk as a CheckpointStore, files as
 * ByteSources read by range (a 2 GB checkpoint is never read whole), and writing a set of
 * files into a folder (fixtures). The browser never imports this file.
 */
import { mkdir, open, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { checkRange, type ByteSource } from '../byte-source';
import {
	openCheckpoint,
	type Checkpoint,
	type CheckpointStore,
	type OpenCheckpointOptions
} from '../checkpoint';
import { readSafetensorsHeader } from '../safetensors';

const isMissing = (error: unknown) => (error as { code?: string }).code === 'ENOENT';

/** A file read by range; each read opens, reads and closes (no handle to leak). */
export async function fileByteSource(path: string): Promise<ByteSource> {
	const { size } = await stat(path);
	return {
		size,
		async read(offset, length) {
			checkRange(offset, length, size, path);
			const out = new Uint8Array(length);
			const handle = await open(path, 'r');
			try {
				let done = 0;
				while (done < length) {
					const { bytesRead } = await handle.read(out, done, length - done, offset + done);
					if (bytesRead === 0) throw new RangeError(`${path}: file shrank while reading`);
					done += bytesRead;
				}
			} finally {
				await handle.close();
			}
			return out;
		}
	};
}

/** A local model folder. Weight files are read in place; progress counts each file once. */
export function directoryStore(dir: string): CheckpointStore {
	return {
		where: dir,
		async readText(name) {
			try {
				return await readFile(join(dir, name), 'utf8');
			} catch (error) {
				if (isMissing(error)) return undefined;
				throw error;
			}
		},
		async readHeader(name) {
			let source: ByteSource;
			try {
				source = await fileByteSource(join(dir, name));
			} catch (error) {
				if (isMissing(error)) return undefined;
				throw error;
			}
			return readSafetensorsHeader(source, name);
		},
		async openWeights(name, header, onBytes) {
			const source = await fileByteSource(join(dir, name));
			onBytes(header.declaredSize);
			return source;
		}
	};
}

/** openCheckpoint over a local folder. */
export function openCheckpointFromDirectory(
	dir: string,
	options?: OpenCheckpointOptions
): Promise<Checkpoint> {
	return openCheckpoint(directoryStore(dir), options);
}

/** Writes `files` (name -> bytes or text) into `dir`, creating it. */
export async function writeModelFiles(
	dir: string,
	files: ReadonlyMap<string, Uint8Array | string>
): Promise<void> {
	await mkdir(dir, { recursive: true });
	for (const [name, data] of files) await writeFile(join(dir, name), data);
}
