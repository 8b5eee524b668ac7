/**
 * @file What the model commands (score, generate, serve) read from disk before any GPU
 * work: the `--model` folder, checked to be a directory and opened as a Hugging Face
 * checkpoint, an `--adapter` folder in PEFT's format, and the JSON of a `--chat FILE`. Each
 * fails with CliInputError naming the flag (an adapter that does not fit the model: the
 * model layer's LoraConfigError).
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Gpu } from '../../src/lib/gpu/device';
import type { Checkpoint } from '../../src/lib/model/hf/checkpoint';
import {
	fileByteSource,
	openCheckpointFromDirectory
} from '../../src/lib/model/hf/node/checkpoint';
import {
	ADAPTER_CONFIG_FILE,
	ADAPTER_WEIGHTS_FILE,
	readPeftAdapter,
	type PeftAdapter
} from '../../src/lib/model/hf/peft-adapter';
import { TransformerModel } from '../../src/lib/model/transformer/transformer';
import type { ModelConfig } from '../../src/lib/model/types';
import { CliInputError } from './args';
import { SEAL_FILE, verifyCheckpoint } from '../../src/lib/grpo/store/checkpoint-seal';
import { HISTORY_LINE_FILE } from '../../src/lib/grpo/store/node/run-store';

/** Opens the `--model` folder (config, tokenizer files, weights index). */
export async function openModelFolder(dir: string): ReturnType<typeof openCheckpointFromDirectory> {
	const info = await stat(dir).catch(() => undefined);
	if (!info?.isDirectory())
		throw new CliInputError(
			`--model: ${dir} is not a directory (give a Hugging Face model folder: ` +
				'config.json, tokenizer.json, tokenizer_config.json, model.safetensors)'
		);
	return openCheckpointFromDirectory(dir);
}

/** The parsed JSON of a `--chat FILE`. */
export async function readChatFile(file: string): Promise<unknown> {
	let text: string;
	try {
		text = await readFile(file, 'utf8');
	} catch (error) {
		throw new CliInputError(`--chat: cannot read ${file} (${(error as Error).message})`);
	}
	try {
		return JSON.parse(text);
	} catch (error) {
		throw new CliInputError(`--chat: ${file} is not valid JSON (${(error as Error).message})`);
	}
}

/**
 * Reads the `--adapter` folder (PEFT's adapter_config.json + adapter_model.safetensors, as
 * `train` writes its checkpoints and peft's save_pretrained does) for `config`'s model;
 * a folder that is not one, an adapter for another model, or a checkpoint whose files differ
 * from their seal (checkpoint-seal.ts), fails before the GPU is used.
 */
export async function readAdapterFolder(dir: string, config: ModelConfig): Promise<PeftAdapter> {
	const info = await stat(dir).catch(() => undefined);
	if (!info?.isDirectory())
		throw new CliInputError(
			`--adapter: ${dir} is not a directory (give a PEFT adapter folder: ` +
				`${ADAPTER_CONFIG_FILE}, ${ADAPTER_WEIGHTS_FILE})`
		);
	const names = await readdir(dir);
	if (names.includes(SEAL_FILE)) {
		const files = new Map<string, Uint8Array>();
		for (const name of names.filter((n) => n !== HISTORY_LINE_FILE))
			files.set(name, new Uint8Array(await readFile(join(dir, name))));
		await verifyCheckpoint(files, dir);
	}
	let configJson: string;
	try {
		configJson = await readFile(join(dir, ADAPTER_CONFIG_FILE), 'utf8');
	} catch {
		throw new CliInputError(`--adapter: ${dir} has no ${ADAPTER_CONFIG_FILE}`);
	}
	const weights = await fileByteSource(join(dir, ADAPTER_WEIGHTS_FILE)).catch(() => {
		throw new CliInputError(`--adapter: ${dir} has no ${ADAPTER_WEIGHTS_FILE}`);
	});
	return readPeftAdapter(config, configJson, weights, { ignoreDropout: true });
}

/** The model with the adapter's weights in its LoRA (or the base model without one). */
export async function createModel(
	gpu: Gpu,
	checkpoint: Checkpoint,
	adapter: PeftAdapter | undefined
): Promise<TransformerModel> {
	const model = await TransformerModel.create(gpu, checkpoint.config, checkpoint.weights, {
		lora: adapter?.config
	});
	if (adapter) model.lora!.write(adapter.params);
	return model;
}
