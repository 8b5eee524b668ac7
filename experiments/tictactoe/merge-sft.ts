/**
 * @file `--grpo-base sft-merged` of learn-tictactoe: the SFT adapter folded into the base
 * weights (src/lib/model/hf/lora-merge.ts) as a new model folder, on which GRPO trains a fresh
 * adapter. Its "LoRA off" model is then the SFT policy, so `--kl-beta` penalises drifting
 * from it (the usual KL-to-the-SFT-model of RLHF), where over the SFT adapter it could only
 * point at the random base.
 *
 *   OUT/sft-adapter/   adapter_config.json + adapter_model.safetensors (PEFT), SFT's result
 *   OUT/model-sft/     OUT/model/'s files, model.safetensors merged (same dtype)
 */
import { copyFile, mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseModelConfig } from '../../src/lib/model/hf/config';
import { memoryByteSource } from '../../src/lib/model/hf/byte-source';
import { mergeLora } from '../../src/lib/model/hf/lora-merge';
import { fileByteSource } from '../../src/lib/model/hf/node/checkpoint';
import {
	ADAPTER_CONFIG_FILE,
	ADAPTER_WEIGHTS_FILE,
	readPeftAdapter
} from '../../src/lib/model/hf/peft-adapter';
import {
	decodeToF32,
	readableDType,
	readSafetensorsHeader
} from '../../src/lib/model/hf/safetensors';
import { encodeSafetensors, type WritableDType } from '../../src/lib/model/hf/safetensors-writer';
import { exists } from '../../scripts/exists';

/** Folders of a run's OUT with --grpo-base sft-merged. */
export const SFT_ADAPTER_DIR = 'sft-adapter';
export const MERGED_DIR = 'model-sft';

const WEIGHTS = 'model.safetensors';

/** Copies the adapter files of checkpoint folder `checkpoint` to `dest` (PEFT's two files),
 * through a temporary folder renamed into place: `dest` is complete or absent. */
export async function keepAdapter(checkpoint: string, dest: string): Promise<void> {
	const tmp = `${dest}.tmp`;
	await rm(tmp, { recursive: true, force: true });
	await mkdir(tmp, { recursive: true });
	for (const f of [ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE])
		await copyFile(join(checkpoint, f), join(tmp, f));
	await rename(tmp, dest);
}

/**
 * Writes `outDir`: `modelDir`'s files with the adapter in `adapterDir` merged into its one
 * model.safetensors. The weights file is written last, under a temporary name renamed into
 * place, so a folder holding model.safetensors is complete.
 */
export async function writeMergedModel(
	modelDir: string,
	adapterDir: string,
	outDir: string
): Promise<void> {
	if (!(await exists(join(modelDir, WEIGHTS))))
		throw new Error(`${modelDir}: merging needs a single ${WEIGHTS} (no shards)`);
	await mkdir(outDir, { recursive: true });
	for (const f of await readdir(modelDir))
		if (f !== WEIGHTS) await copyFile(join(modelDir, f), join(outDir, f));
	const generation = join(modelDir, 'generation_config.json');
	const config = parseModelConfig(
		await readFile(join(modelDir, 'config.json'), 'utf8'),
		(await exists(generation)) ? await readFile(generation, 'utf8') : undefined
	);
	const adapter = await readPeftAdapter(
		config,
		await readFile(join(adapterDir, ADAPTER_CONFIG_FILE), 'utf8'),
		await fileByteSource(join(adapterDir, ADAPTER_WEIGHTS_FILE))
	);
	const bytes = new Uint8Array(await readFile(join(modelDir, WEIGHTS)));
	const header = await readSafetensorsHeader(memoryByteSource(bytes), WEIGHTS);
	const tensors = [...header.tensors.values()].map((t) => ({
		name: t.name,
		shape: t.shape,
		dtype: t.dtype as WritableDType,
		data: decodeToF32(bytes.subarray(t.begin, t.end), readableDType(header, t))
	}));
	const merged = mergeLora(config, tensors, adapter);
	const tmp = join(outDir, `${WEIGHTS}.tmp`);
	await writeFile(tmp, encodeSafetensors(merged, header.metadata));
	await rename(tmp, join(outDir, WEIGHTS));
}
