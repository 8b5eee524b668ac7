/**
 * @file Writes the models the app ships with (scripts/default-model.ts) unless they are
 * there: `npm start` runs this first, so the page trains offline with nothing to download.
 *
 *   npx tsx scripts/make-default-model.ts          # every bundled model under static/models/
 *   npx tsx scripts/make-default-model.ts DIR      # tabrl-tiny (tic-tac-toe) into DIR
 */
import { writeBundledModels, writeDefaultModel } from './default-model';

const dir = process.argv[2];
void (dir ? writeDefaultModel(dir) : writeBundledModels());
