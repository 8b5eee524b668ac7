/**
 * @file Where the bundled model and the shipped warm starts are: the project's static/
 * folder (beside this checkout, or the working directory's for a bundle run elsewhere).
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** Where the bundled model and the shipped warm starts are: the project's static/ folder. */
export const STATIC_ROOT =
	[resolve(import.meta.dirname, '../../static'), resolve('static')].find((dir) =>
		existsSync(join(dir, 'warm-starts'))
	) ?? resolve(import.meta.dirname, '../../static'); // (the first: a bundle elsewhere, e.g. .gpu/, uses the working directory's)
