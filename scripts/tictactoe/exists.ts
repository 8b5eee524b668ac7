/** @file Whether a path exists (the scripts' resume checks). */
import { stat } from 'node:fs/promises';

export const exists = (path: string): Promise<boolean> =>
	stat(path).then(
		() => true,
		() => false
	);
