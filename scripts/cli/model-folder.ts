/**
 * @file What the model commands (score, generate, serve) read from disk before any GPU
 * work: the `--model` folder, checked to be a directory and opened as a Hugging Face
 * checkpoint, and the JSON of a `--chat FILE`. Both fail with CliInputError naming the flag.
 */
import { readFile, stat } from 'node:fs/promises';
import { openCheckpointFromDirectory } from '../../src/lib/model/node-checkpoint';
import { CliInputError } from './args';

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
