/**
 * @file The models the app ships with, one per environment family, under static/models/:
 * ~5M-parameter Llama-architecture models with random initial weights (seed 1) and a BPE
 * tokenizer learned from their environment's text (scripts/tictactoe-model.ts), generated,
 * not downloaded. Their warm starts (static/warm-starts/<model>/) name their tensors' hash,
 * so each must come out bit-identical on every machine (tests/unit/run/warm-start-files.test.ts
 * checks).
 */
import { join, resolve } from 'node:path';
import { exists } from './exists';
import { MODEL_SIZES, ticTacToeCorpus, writeTicTacToeModel } from './tictactoe-model';

export const DEFAULT_MODEL_DIR = 'static/models/tabrl-tiny';

/** The bundled models by folder name: the text their tokenizer learns from. */
export const BUNDLED_MODELS: Record<string, () => Promise<string> | string> = {
	'tabrl-tiny': ticTacToeCorpus
};

/** Writes the bundled model `name` into `dir` unless it is there already. */
export async function writeBundledModel(name: string, dir: string): Promise<void> {
	if (await exists(join(dir, 'model.safetensors'))) return;
	const corpus = BUNDLED_MODELS[name];
	if (!corpus)
		throw new Error(`no bundled model '${name}' (${Object.keys(BUNDLED_MODELS).join(', ')})`);
	const { parameters, vocab } = await writeTicTacToeModel(dir, MODEL_SIZES.small, await corpus());
	console.error(`wrote ${dir}: ${parameters} parameters, vocab ${vocab}`);
}

/** Writes the tic-tac-toe model (tabrl-tiny) into `dir` unless it is there already. */
export function writeDefaultModel(dir = DEFAULT_MODEL_DIR): Promise<void> {
	return writeBundledModel('tabrl-tiny', dir);
}

/** Writes every bundled model under `staticRoot`/models/. */
export async function writeBundledModels(staticRoot = 'static'): Promise<void> {
	for (const name of Object.keys(BUNDLED_MODELS))
		await writeBundledModel(name, join(staticRoot, 'models', name));
}

/** When `path` is a bundled model's folder under `staticRoot`, writes it if absent. */
export async function ensureBundledModel(path: string, staticRoot: string): Promise<void> {
	for (const name of Object.keys(BUNDLED_MODELS)) {
		const dir = resolve(staticRoot, 'models', name);
		if (resolve(path) === dir) return writeBundledModel(name, dir);
	}
}
