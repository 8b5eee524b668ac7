/**
 * The shipped warm start fits the bundled model as generated on this machine: the model
 * (scripts/default-model.ts, written from its seed into a temp folder) must come out
 * bit-identical everywhere, since the manifest (static/warm-starts/tabrl-tiny/tictactoe/
 * warm-start.json) names it by its tensors' hash. Also: the adapter file is the one the
 * manifest hashed, small enough to ship (< 20 MB), and reads as an adapter of that model.
 * Skipped only when the warm start is not in the checkout. No GPU.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { writeDefaultModel } from '../../../scripts/default-model';
import { memoryByteSource } from '../../../src/lib/model/byte-source';
import { openCheckpointFromDirectory } from '../../../src/lib/model/node-checkpoint';
import {
	ADAPTER_CONFIG_FILE,
	ADAPTER_WEIGHTS_FILE,
	readPeftAdapter
} from '../../../src/lib/model/peft-adapter';
import {
	checkWarmStart,
	parseWarmStartManifest,
	sha256Hex,
	tensorsSha256,
	WARM_START_MANIFEST
} from '../../../src/lib/model/warm-start';
import { warmStartPath } from '../../../src/lib/run';

const STATIC = fileURLToPath(new URL('../../../static/', import.meta.url));
const DIR = join(STATIC, warmStartPath('tictactoe'));
const MANIFEST = join(DIR, WARM_START_MANIFEST);

let tmp: string | undefined;
afterAll(async () => {
	if (tmp) await rm(tmp, { recursive: true, force: true });
});

describe.skipIf(!existsSync(MANIFEST))('the shipped tic-tac-toe warm start', () => {
	it('names the bundled model as generated here, and its own adapter file', async () => {
		const manifest = parseWarmStartManifest(await readFile(MANIFEST, 'utf8'), DIR);
		expect(manifest.environment).toBe('tictactoe');

		const weightsFile = join(DIR, ADAPTER_WEIGHTS_FILE);
		const adapterBytes = new Uint8Array(await readFile(weightsFile));
		expect(await sha256Hex(adapterBytes)).toBe(manifest.adapterSha256);
		expect((await stat(weightsFile)).size).toBeLessThan(20 * 2 ** 20);

		tmp = await mkdtemp(join(tmpdir(), 'tabrl-default-model-'));
		const modelDir = join(tmp, 'tabrl-tiny');
		await writeDefaultModel(modelDir);
		const base = await openCheckpointFromDirectory(modelDir);
		expect(await tensorsSha256(base.weights)).toBe(manifest.base.tensorsSha256);
		await expect(
			checkWarmStart(manifest, base.weights, adapterBytes, DIR)
		).resolves.toBeUndefined();

		// and it reads as an adapter of that model (every A and B in its shape)
		const adapter = await readPeftAdapter(
			base.config,
			await readFile(join(DIR, ADAPTER_CONFIG_FILE), 'utf8'),
			memoryByteSource(adapterBytes)
		);
		expect(adapter.params.size).toBe(
			2 * base.config.numLayers * adapter.config.targetModules.length
		);
	}, 300_000);
});
