/**
 * @file Writes the model the app ships with (scripts/default-model.ts) unless it is there:
 * `npm start` runs this first, so the page trains offline with nothing to download.
 *
 *   npx tsx scripts/make-default-model.ts [DIR]
 */
import { DEFAULT_MODEL_DIR, writeDefaultModel } from './default-model';

void writeDefaultModel(process.argv[2] ?? DEFAULT_MODEL_DIR);
