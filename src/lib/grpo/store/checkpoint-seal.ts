/**
 * @file A checkpoint's files sealed with their sha256 (checkpoint-sha256.json: {format,
 * version, files: {name: {sha256, bytes}}}), written with every save and checked on every
 * load, so changed bytes are a CheckpointCorruptError naming the file, never trained on or
 * served. A checkpoint without a seal loads unchecked.
 */
import { sha256Hex } from '../../model/hf/warm-start';
import { CheckpointCorruptError } from '../errors';

export const SEAL_FILE = 'checkpoint-sha256.json';
const FORMAT = 'tabrl-checkpoint-sha256';

interface Seal {
	format: typeof FORMAT;
	version: 1;
	files: Record<string, { sha256: string; bytes: number }>;
}

/** `files` with their seal added (any seal given is replaced). */
export async function sealCheckpoint(
	files: ReadonlyMap<string, Uint8Array>
): Promise<Map<string, Uint8Array>> {
	const seal: Seal = { format: FORMAT, version: 1, files: {} };
	const out = new Map<string, Uint8Array>();
	for (const [name, bytes] of files) {
		if (name === SEAL_FILE) continue;
		seal.files[name] = { sha256: await sha256Hex(bytes), bytes: bytes.length };
		out.set(name, bytes);
	}
	out.set(SEAL_FILE, new TextEncoder().encode(JSON.stringify(seal, null, 1) + '\n'));
	return out;
}

/**
 * `files` without their seal, once every file matches it; `where` (the checkpoint's folder
 * or key) prefixes the name of the file an error is about.
 */
export async function verifyCheckpoint(
	files: ReadonlyMap<string, Uint8Array>,
	where: string
): Promise<Map<string, Uint8Array>> {
	const out = new Map(files);
	const sealBytes = out.get(SEAL_FILE);
	if (!sealBytes) return out;
	out.delete(SEAL_FILE);
	let seal: Seal;
	try {
		seal = JSON.parse(new TextDecoder().decode(sealBytes)) as Seal;
	} catch {
		throw new CheckpointCorruptError(`${where}/${SEAL_FILE}`, 'it is not JSON');
	}
	if (seal?.format !== FORMAT || seal.version !== 1 || typeof seal.files !== 'object')
		throw new CheckpointCorruptError(`${where}/${SEAL_FILE}`, 'it is not a checkpoint seal');
	for (const [name, want] of Object.entries(seal.files)) {
		const bytes = out.get(name);
		if (!bytes) throw new CheckpointCorruptError(`${where}/${name}`, 'the file is missing');
		if (bytes.length !== want.bytes)
			throw new CheckpointCorruptError(
				`${where}/${name}`,
				`it has ${bytes.length} bytes, ${want.bytes} were saved`
			);
		const got = await sha256Hex(bytes);
		if (got !== want.sha256)
			throw new CheckpointCorruptError(
				`${where}/${name}`,
				`its sha256 is ${got.slice(0, 16)}…, ${want.sha256.slice(0, 16)}… was saved (its bytes changed)`
			);
	}
	for (const name of out.keys())
		if (!(name in seal.files))
			throw new CheckpointCorruptError(
				`${where}/${name}`,
				'the file was not saved with the checkpoint'
			);
	return out;
}
