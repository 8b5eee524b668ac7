/**
 * Each shipped warm start fits its bundled model as generated here: the models (written from
 * their seeds) must be bit-identical everywhere, since each manifest names its base by the
 * tensors' and tokenizer.json's hashes. Also: the adapter file is the one hashed, all ship
 * under 20 MB, each reads as an adapter of its model, and a wrong base is refused
 * (tabrl-tiny and tabrl-tiny-2048 differ only by tokenizer). No GPU.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeBundledModel } from '../../../scripts/default-model';
import { memoryByteSource } from '../../../src/lib/model/hf/byte-source';
import type { Checkpoint } from '../../../src/lib/model/hf/checkpoint';
import { openCheckpointFromDirectory } from '../../../src/lib/model/hf/node/checkpoint';
import {
	ADAPTER_CONFIG_FILE,
	ADAPTER_WEIGHTS_FILE,
	readPeftAdapter
} from '../../../src/lib/model/hf/peft-adapter';
import {
	checkWarmStart,
	parseWarmStartManifest,
	sha256Hex,
	tensorsSha256,
	WARM_START_MANIFEST
} from '../../../src/lib/model/hf/warm-start';
import { BUNDLED_MODEL_NAMES, warmStartPath, type EnvironmentName } from '../../../src/lib/run';

const STATIC = fileURLToPath(new URL('../../../static/', import.meta.url));
const SHIPPED: EnvironmentName[] = ['tictactoe', '2048', 'inbox'];
const dirOf = (env: EnvironmentName) => join(STATIC, warmStartPath(env));
const present = SHIPPED.every((env) => existsSync(join(dirOf(env), WARM_START_MANIFEST)));

let tmp: string | undefined;
const bases = new Map<string, Checkpoint>();
beforeAll(async () => {
	if (!present) return;
	tmp = await mkdtemp(join(tmpdir(), 'tabrl-bundled-models-'));
	for (const name of new Set(SHIPPED.map((env) => BUNDLED_MODEL_NAMES[env]))) {
		await writeBundledModel(name, join(tmp, name));
		bases.set(name, await openCheckpointFromDirectory(join(tmp, name)));
	}
}, 300_000);
afterAll(async () => {
	if (tmp) await rm(tmp, { recursive: true, force: true });
});

const read = async (env: EnvironmentName) => {
	const dir = dirOf(env);
	return {
		dir,
		manifest: parseWarmStartManifest(await readFile(join(dir, WARM_START_MANIFEST), 'utf8'), dir),
		adapterBytes: new Uint8Array(await readFile(join(dir, ADAPTER_WEIGHTS_FILE)))
	};
};

describe.skipIf(!present)('the shipped warm starts', () => {
	it.each(SHIPPED)(
		'%s names its bundled model as generated here, and its own adapter file',
		async (env) => {
			const { dir, manifest, adapterBytes } = await read(env);
			expect(manifest.environment).toBe(env);
			expect(manifest.base.name).toBe(BUNDLED_MODEL_NAMES[env]);
			expect(await sha256Hex(adapterBytes)).toBe(manifest.adapterSha256);
			const base = bases.get(BUNDLED_MODEL_NAMES[env])!;
			expect(await tensorsSha256(base.weights)).toBe(manifest.base.tensorsSha256);
			expect(await sha256Hex(new TextEncoder().encode(base.files.tokenizerJson))).toBe(
				manifest.base.tokenizerSha256
			);
			await expect(
				checkWarmStart(manifest, base.weights, adapterBytes, dir, base.files.tokenizerJson)
			).resolves.toBeUndefined();
			// and it reads as an adapter of that model (every A and B in its shape)
			const adapter = await readPeftAdapter(
				base.config,
				await readFile(join(dir, ADAPTER_CONFIG_FILE), 'utf8'),
				memoryByteSource(adapterBytes)
			);
			expect(adapter.params.size).toBe(
				2 * base.config.numLayers * adapter.config.targetModules.length
			);
		},
		60_000
	);

	it('are under 20 MB together', async () => {
		let bytes = 0;
		for (const env of SHIPPED) bytes += (await stat(join(dirOf(env), ADAPTER_WEIGHTS_FILE))).size;
		expect(bytes).toBeLessThan(20 * 2 ** 20);
	});

	it('a warm start on the wrong base is refused: same tensors, another tokenizer', async () => {
		const { dir, manifest, adapterBytes } = await read('tictactoe');
		const other = bases.get(BUNDLED_MODEL_NAMES['2048'])!;
		// tabrl-tiny and tabrl-tiny-2048 are the same random weights (seed 1, vocab 448) ...
		expect(await tensorsSha256(other.weights)).toBe(manifest.base.tensorsSha256);
		// ... read through different tokenizers
		await expect(
			checkWarmStart(manifest, other.weights, adapterBytes, dir, other.files.tokenizerJson)
		).rejects.toThrow(/another tokenizer/);
	});
});
