/** @file Whether a path exists (the scripts' checks for what an earlier call wrote). */
import { stat } from 'node:fs/promises';

export const exists = (path: string): Promise<boolean> =>
	stat(path).then(
		() => true,
		() => false
	);
