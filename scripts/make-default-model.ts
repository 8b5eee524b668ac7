/**
 * @file Writes the model the app ships with: static/models/tabrl-tiny/, a ~5M-parameter
 * Llama-architecture model with random initial weights and a BPE tokenizer learned from
 * tic-tac-toe text (scripts/tictactoe/make-model.ts), so the page can train offline with
 * nothing to download. `npm start` runs this first; the folder is generated, not committed,
 * and is left alone when it is already there.
 *
 *   npx tsx scripts/make-default-model.ts [DIR]
 */
import { join } from 'node:path';
import { exists } from './tictactoe/exists';
import { MODEL_SIZES, writeTicTacToeModel } from './tictactoe/make-model';

export const DEFAULT_MODEL_DIR = 'static/models/tabrl-tiny';

async function main(): Promise<void> {
	const dir = process.argv[2] ?? DEFAULT_MODEL_DIR;
	if (await exists(join(dir, 'model.safetensors'))) return;
	const { parameters, vocab } = await writeTicTacToeModel(dir, MODEL_SIZES.small);
	console.error(`wrote ${dir}: ${parameters} parameters, vocab ${vocab}`);
}

void main();
