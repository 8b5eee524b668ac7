/**
 * @file Node only: a folder as the cache of a URL prefix's model files (url-checkpoint.ts's
 * CacheLike), so `cli` downloads a Hub model once and then opens it as a plain folder. A
 * file appears under its own name only once complete (written to NAME.part, then renamed),
 * so a download cut off leaves nothing that looks whole; the next run fetches it again.
 */
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { CacheLike } from '../url-checkpoint';

/** The files of `prefix` (a URL ending in '/') kept in `dir`. */
export function diskModelCache(prefix: string, dir: string): CacheLike {
	const base = prefix.endsWith('/') ? prefix : `${prefix}/`;
	/** The file a key names: a plain name below the prefix, or none. */
	const pathOf = (key: string): string | undefined => {
		if (!key.startsWith(base)) return undefined;
		const name = key.slice(base.length);
		return /^[\w.-]+$/.test(name) && !name.startsWith('..') ? join(dir, name) : undefined;
	};
	return {
		async match(key) {
			const path = pathOf(key);
			if (!path || !(await stat(path).catch(() => undefined))?.isFile()) return undefined;
			const body = await readFile(path);
			return new Response(body, { headers: { 'content-length': String(body.length) } });
		},
		async put(key, response) {
			const path = pathOf(key);
			if (!path) return;
			await mkdir(dir, { recursive: true });
			await writeFile(`${path}.part`, new Uint8Array(await response.arrayBuffer()));
			await rename(`${path}.part`, path);
		},
		async delete(key) {
			const path = pathOf(key);
			if (!path) return false;
			return rm(path).then(
				() => true,
				() => false
			);
		}
	};
}
