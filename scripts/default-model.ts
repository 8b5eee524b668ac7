/**
 * @file The model the app ships with: static/models/tabrl-tiny/, a ~5M-parameter
 * Llama-architecture model with random initial weights (seed 1) and a BPE tokenizer learned
 * from tic-tac-toe text (scripts/tictactoe-model.ts), generated, not downloaded. Its
 * warm starts (static/warm-starts/tabrl-tiny/) name its tensors' hash, so it must come out
 * bit-identical on every machine (tests/unit/run/warm-start-files.test.ts checks).
 */
import { join } from 'node:path';
import { exists } from './exists';
import { MODEL_SIZES, writeTicTacToeModel } from './tictactoe-model';

export const DEFAULT_MODEL_DIR = 'static/models/tabrl-tiny';

/** Writes the bundled model into `dir` unless it is there already. */
export async function writeDefaultModel(dir = DEFAULT_MODEL_DIR): Promise<void> {
	if (await exists(join(dir, 'model.safetensors'))) return;
	const { parameters, vocab } = await writeTicTacToeModel(dir, MODEL_SIZES.small);
	console.error(`wrote ${dir}: ${parameters} parameters, vocab ${vocab}`);
}
