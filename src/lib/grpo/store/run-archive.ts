/**
 * @file A saved run as one zip, laid out as `cli train --out` keeps it: NAME/tabrl-run.json
 * (format, version), run.json, history.jsonl, checkpoints/NNNN/ (adapter, optimizer,
 * trainer_state, trajectories.jsonl). Reading checks everything before anything is written
 * and refuses the rest with a RunArchiveError saying why (unknown entries, bad JSON or
 * safetensors, over MAX_ARCHIVE_BYTES by the declared sizes, before inflating).
 */
import { strFromU8, strToU8, unzipSync, zipSync, type Zippable } from 'fflate';
import { ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE } from '../../model/hf/peft-adapter';
import { parseSafetensorsHeader } from '../../model/hf/safetensors';
import { OPTIMIZER_FILE, TRAINER_STATE_FILE, TRAJECTORIES_FILE } from './checkpoint';
import { GrpoError, RunArchiveError } from '../errors';
import {
	CHECKPOINTS_DIR,
	checkpointName,
	HISTORY_FILE,
	META_FILE,
	type RunMeta,
	type RunStore
} from './run-store';

export const RUN_ARCHIVE_FORMAT = 'tabrl-run';
export const RUN_ARCHIVE_VERSION = 1;
/** The archive's own file, beside run.json. */
export const RUN_ARCHIVE_MANIFEST = 'tabrl-run.json';
/** The most bytes an archive may hold once inflated. */
export const MAX_ARCHIVE_BYTES = 1 << 30;
const MAX_ENTRIES = 20_000;

/** The files a checkpoint folder may hold; the first three it must. */
const CHECKPOINT_FILES = [
	ADAPTER_CONFIG_FILE,
	ADAPTER_WEIGHTS_FILE,
	TRAINER_STATE_FILE,
	OPTIMIZER_FILE,
	TRAJECTORIES_FILE
];
const SAFETENSORS = new Set([ADAPTER_WEIGHTS_FILE, OPTIMIZER_FILE]);
/** A checkpoint's file within the run's folder: checkpoints/NNNN/FILE. */
const CHECKPOINT_ENTRY = new RegExp(`^${CHECKPOINTS_DIR}/(\\d{4,9})/([^/]+)$`);
/** What operating systems add when they zip a folder: skipped. */
const JUNK = /(^|\/)(__MACOSX\/|\.DS_Store$|Thumbs\.db$)/;

/** A run's contents, as a store holds them. */
export interface RunContents {
	meta: RunMeta;
	history: Record<string, unknown>[];
	/** Each kept checkpoint's files, by step (ascending). */
	checkpoints: Map<number, Map<string, Uint8Array>>;
}

/** Everything a store holds of its run (its summary must exist). */
export async function readRunContents(store: RunStore): Promise<RunContents> {
	const meta = await store.readMeta();
	if (!meta) throw new RunArchiveError('the run has no summary (run.json) to export');
	const checkpoints = new Map<number, Map<string, Uint8Array>>();
	for (const step of await store.listCheckpoints())
		checkpoints.set(step, await store.loadCheckpoint(step));
	return { meta, history: await store.readHistory(), checkpoints };
}

/** The zip of the file's comment. Weights are stored (they do not compress), text deflated. */
export function packRunArchive(run: RunContents, exported = new Date()): Uint8Array {
	const root = run.meta.name;
	const json = (value: unknown) => strToU8(JSON.stringify(value, null, 2) + '\n');
	const entries: Zippable = {
		[`${root}/${RUN_ARCHIVE_MANIFEST}`]: json({
			format: RUN_ARCHIVE_FORMAT,
			version: RUN_ARCHIVE_VERSION,
			exported: exported.toISOString()
		}),
		[`${root}/${META_FILE}`]: json(run.meta),
		[`${root}/${HISTORY_FILE}`]: strToU8(run.history.map((h) => JSON.stringify(h) + '\n').join(''))
	};
	for (const [step, files] of run.checkpoints)
		for (const [name, bytes] of files)
			entries[`${root}/${CHECKPOINTS_DIR}/${checkpointName(step)}/${name}`] = SAFETENSORS.has(name)
				? [bytes, { level: 0 }]
				: bytes;
	return zipSync(entries, { level: 6, mtime: exported });
}

/** Reads and checks an archive (see the file's comment); throws RunArchiveError. */
export function unpackRunArchive(
	bytes: Uint8Array,
	{ maxBytes = MAX_ARCHIVE_BYTES }: { maxBytes?: number } = {}
): RunContents {
	const entries = unzipEntries(bytes, maxBytes);
	const manifestPath = [...entries.keys()].find(
		(p) => p === RUN_ARCHIVE_MANIFEST || p.endsWith(`/${RUN_ARCHIVE_MANIFEST}`)
	);
	if (manifestPath === undefined)
		throw new RunArchiveError(
			`it is a zip without ${RUN_ARCHIVE_MANIFEST}: not a run exported by TabRL`
		);
	const prefix = manifestPath.slice(0, -RUN_ARCHIVE_MANIFEST.length);
	const manifest = jsonObject(entries.get(manifestPath)!, RUN_ARCHIVE_MANIFEST);
	if (manifest.format !== RUN_ARCHIVE_FORMAT)
		throw new RunArchiveError(
			`${RUN_ARCHIVE_MANIFEST} says format ${JSON.stringify(manifest.format)}, not "${RUN_ARCHIVE_FORMAT}"`
		);
	const version = manifest.version;
	if (!Number.isSafeInteger(version) || (version as number) < 1)
		throw new RunArchiveError(
			`${RUN_ARCHIVE_MANIFEST}: version ${JSON.stringify(version)} is not a version`
		);
	if ((version as number) > RUN_ARCHIVE_VERSION)
		throw new RunArchiveError(
			`it is version ${version}, made by a newer TabRL (this one reads version ${RUN_ARCHIVE_VERSION}): update the page`
		);

	const take = (name: string): Uint8Array => {
		const file = entries.get(prefix + name);
		if (!file) throw new RunArchiveError(`${prefix}${name} is missing`);
		return file;
	};
	const meta = checkMeta(jsonObject(take(META_FILE), META_FILE));
	const history = parseHistory(take(HISTORY_FILE));
	const checkpoints = new Map<number, Map<string, Uint8Array>>();
	for (const [path, file] of entries) {
		if (!path.startsWith(prefix))
			throw new RunArchiveError(`${path} lies outside the run's folder ${prefix || '(the top)'}`);
		const rest = path.slice(prefix.length);
		if ([RUN_ARCHIVE_MANIFEST, META_FILE, HISTORY_FILE].includes(rest)) continue;
		const m = CHECKPOINT_ENTRY.exec(rest);
		if (!m || !CHECKPOINT_FILES.includes(m[2]))
			throw new RunArchiveError(`${path} is not a file a run holds`);
		const step = Number(m[1]);
		if (checkpointName(step) !== m[1])
			throw new RunArchiveError(
				`${path}: the folder is not a step's name (${checkpointName(step)})`
			);
		if (!checkpoints.has(step)) checkpoints.set(step, new Map());
		checkpoints.get(step)!.set(m[2], file);
	}
	for (const [step, files] of checkpoints) checkCheckpoint(step, files, prefix);
	return {
		meta,
		history,
		checkpoints: new Map([...checkpoints].sort(([a], [b]) => a - b))
	};
}

/**
 * Writes a run's contents into an empty store: the checkpoints, then the history, then the
 * summary last (a run is listed by its summary, so a write cut short is not listed).
 */
export async function writeRunContents(run: RunContents, store: RunStore): Promise<void> {
	for (const [step, files] of run.checkpoints) await store.saveCheckpoint(step, files);
	for (const entry of run.history) await store.appendHistory(entry);
	await store.writeMeta(run.meta);
}

function unzipEntries(bytes: Uint8Array, maxBytes: number): Map<string, Uint8Array> {
	if (bytes.length < 22 || bytes[0] !== 0x50 || bytes[1] !== 0x4b)
		throw new RunArchiveError('it is not a zip file');
	let total = 0;
	let count = 0;
	let unzipped: Record<string, Uint8Array>;
	try {
		unzipped = unzipSync(bytes, {
			filter(file) {
				if (file.name.endsWith('/') || JUNK.test(file.name)) return false;
				total += file.originalSize;
				if (++count > MAX_ENTRIES || total > maxBytes)
					throw new RunArchiveError(
						`it holds more than ${MAX_ENTRIES} files or ${maxBytes / 2 ** 20} MiB once inflated`
					);
				return true;
			}
		});
	} catch (error) {
		if (error instanceof GrpoError) throw error;
		throw new RunArchiveError(`the zip is damaged (${(error as Error).message})`);
	}
	const entries = new Map<string, Uint8Array>();
	for (const [path, file] of Object.entries(unzipped)) {
		if (path.startsWith('/') || path.split('/').some((p) => p === '..' || p === '.'))
			throw new RunArchiveError(`${path}: a path that leaves its folder`);
		entries.set(path, file);
	}
	return entries;
}

function jsonObject(bytes: Uint8Array, name: string): Record<string, unknown> {
	let value: unknown;
	try {
		value = JSON.parse(strFromU8(bytes));
	} catch (error) {
		throw new RunArchiveError(`${name} is not valid JSON (${(error as Error).message})`);
	}
	if (typeof value !== 'object' || value === null || Array.isArray(value))
		throw new RunArchiveError(`${name} is not a JSON object`);
	return value as Record<string, unknown>;
}

const isStep = (v: unknown) => Number.isSafeInteger(v) && (v as number) >= 0;

function checkMeta(m: Record<string, unknown>): RunMeta {
	for (const field of ['name', 'project', 'baseModel', 'created', 'updated'])
		if (typeof m[field] !== 'string')
			throw new RunArchiveError(
				`run.json: ${field} must be a string, not ${JSON.stringify(m[field])}`
			);
	if (!isStep(m.step))
		throw new RunArchiveError(`run.json: step ${JSON.stringify(m.step)} is not a step`);
	if (m.lastReward !== null && !Number.isFinite(m.lastReward))
		throw new RunArchiveError(
			`run.json: lastReward ${JSON.stringify(m.lastReward)} is not a number`
		);
	const w = m.warmStart as Record<string, unknown> | undefined;
	if (w !== undefined && (typeof w?.adapter !== 'string' || typeof w?.mode !== 'string'))
		throw new RunArchiveError('run.json: warmStart must hold an adapter and a mode');
	return m as unknown as RunMeta;
}

function parseHistory(bytes: Uint8Array): Record<string, unknown>[] {
	const lines = strFromU8(bytes).split('\n');
	const out: Record<string, unknown>[] = [];
	lines.forEach((line, i) => {
		if (!line.trim()) return;
		const entry = jsonObject(strToU8(line), `history.jsonl line ${i + 1}`);
		if (!isStep(entry.step)) throw new RunArchiveError(`history.jsonl line ${i + 1} has no step`);
		out.push(entry);
	});
	return out;
}

function checkCheckpoint(step: number, files: Map<string, Uint8Array>, prefix: string): void {
	const where = `${prefix}${CHECKPOINTS_DIR}/${checkpointName(step)}`;
	for (const name of [ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE, TRAINER_STATE_FILE])
		if (!files.has(name)) throw new RunArchiveError(`${where} has no ${name}`);
	jsonObject(files.get(ADAPTER_CONFIG_FILE)!, `${where}/${ADAPTER_CONFIG_FILE}`);
	const state = jsonObject(files.get(TRAINER_STATE_FILE)!, `${where}/${TRAINER_STATE_FILE}`);
	if (state.step !== step)
		throw new RunArchiveError(
			`${where}/${TRAINER_STATE_FILE} is of step ${JSON.stringify(state.step)}`
		);
	for (const name of SAFETENSORS) {
		const bytes = files.get(name);
		if (!bytes) continue;
		try {
			parseSafetensorsHeader(bytes, name, bytes.length); // its size checked against the header's
		} catch (error) {
			throw new RunArchiveError(`${where}/${name} is damaged (${(error as Error).message})`);
		}
	}
}
