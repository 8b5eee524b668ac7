/**
 * @file The models the app ships with, one per environment family, under static/models/:
 * ~5M-parameter Llama models with random weights (seed 1) and a BPE tokenizer learned from
 * their environment's text, generated, not downloaded. Their warm starts name their tensors'
 * hash, so each must come out bit-identical everywhere (warm-start-files.test.ts checks).
 */
import { randomUUID } from 'node:crypto';
import { rename, rm } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { exists } from './exists';
import * as game2048 from '../src/lib/agent/envs/game2048';
import * as inbox from '../src/lib/agent/envs/inbox';
import { MODEL_SIZES, renderCorpus, ticTacToeCorpus, writeTicTacToeModel } from './tictactoe-model';

export const DEFAULT_MODEL_DIR = 'static/models/tabrl-tiny';

interface BundledModel {
	/** The text the tokenizer learns its merges from: the environment's conversations. */
	corpus(): Promise<string> | string;
	merges: number;
	splitTokens?: readonly string[];
}

/**
 * The bundled models by folder name. Corpus seeds are apart from the demonstrations' and
 * the evaluations' (the tokenizer is part of the base, made before any of them).
 */
export const BUNDLED_MODELS: Record<string, BundledModel> = {
	'tabrl-tiny': { corpus: ticTacToeCorpus, merges: MODEL_SIZES.small.merges },
	'tabrl-tiny-2048': {
		corpus: async () =>
			renderCorpus(await game2048.demonstrations(40, 424242, { historyTurns: 0 })),
		merges: 300,
		// a board's cells never share a token: the same cell is the same tokens in every row
		splitTokens: ['|']
	},
	'tabrl-tiny-inbox': {
		corpus: async () => renderCorpus(await inbox.demonstrations(400, 424)),
		merges: 800,
		// digits one token each: a message id, a time or an amount is copied digit by digit
		splitTokens: [...'0123456789']
	}
};

/**
 * Writes the bundled model `name` into `dir` unless it is there already. Written into a
 * sibling folder and renamed into place, so processes started side by side (the device
 * scripts' jobs) never read a half-written file: the first rename wins, the others find it.
 */
export async function writeBundledModel(name: string, dir: string): Promise<void> {
	const weights = join(dir, 'model.safetensors');
	if (await exists(weights)) return;
	const model = BUNDLED_MODELS[name];
	if (!model)
		throw new Error(`no bundled model '${name}' (${Object.keys(BUNDLED_MODELS).join(', ')})`);
	const staging = join(dirname(dir), `.${basename(dir)}.${randomUUID()}.partial`);
	await rm(staging, { recursive: true, force: true });
	try {
		const { parameters, vocab } = await writeTicTacToeModel(
			staging,
			{ ...MODEL_SIZES.small, merges: model.merges, splitTokens: model.splitTokens },
			await model.corpus()
		);
		await rename(staging, dir).catch(async (error: NodeJS.ErrnoException) => {
			// another process's rename came first (the folder is there and not empty)
			if (!['ENOTEMPTY', 'EEXIST'].includes(error.code ?? '') || !(await exists(weights)))
				throw error;
		});
		console.error(`wrote ${dir}: ${parameters} parameters, vocab ${vocab}`);
	} finally {
		await rm(staging, { recursive: true, force: true });
	}
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
