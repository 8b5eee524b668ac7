/**
 * @file Node only: a `--model` given as a catalog key ('qwen2.5-0.5b') or a model URL prefix
 * (a Hub resolve/main/ URL, or any server laid out like one) made into a local folder: the
 * files are downloaded once into the cache (TABRL_CACHE, default ~/.cache/tabrl) under the
 * Hugging Face cache's layout, models--ORG--NAME/snapshots/main/, so the folder's portable
 * name is the Hub id (base-name.ts). A folder path is returned as it is.
 */
import { stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { LoadProgress } from '../checkpoint';
import { hubModel, hubUrl } from '../hub-models';
import { MANIFEST_NAME, openCheckpointFromUrl } from '../url-checkpoint';
import { diskModelCache } from './disk-cache';

/** The URL prefix a `--model` value names, or undefined for a folder path. */
export function modelUrl(model: string): string | undefined {
	const entry = hubModel(model);
	if (entry) return hubUrl(entry.id);
	return /^https?:\/\//.test(model) ? (model.endsWith('/') ? model : `${model}/`) : undefined;
}

/** The cache folder of a URL prefix: its repo (the two path segments before resolve/). */
export function cacheFolder(url: string, root = defaultCacheRoot()): string {
	const { host, pathname } = new URL(url);
	const parts = pathname.split('/').filter(Boolean);
	const at = parts.indexOf('resolve');
	const repo = (at >= 2 ? parts.slice(at - 2, at) : [host, ...parts].slice(-2)).map((p) =>
		p.replace(/[^\w.-]/g, '_')
	);
	return join(root, `models--${repo.join('--')}`, 'snapshots', 'main');
}

export const defaultCacheRoot = (): string =>
	process.env.TABRL_CACHE ?? join(homedir(), '.cache', 'tabrl');

/**
 * The folder of `model`: downloaded (config, tokenizer, weights, each checked as the browser
 * checks it) unless a complete download is cached, progress per file to `onProgress`.
 */
export async function modelFolder(
	model: string,
	options: { root?: string; onProgress?: (p: LoadProgress) => void } = {}
): Promise<string> {
	const url = modelUrl(model);
	if (!url) return model;
	const dir = cacheFolder(url, options.root);
	// the manifest is written after a complete load: then the folder is whole
	if (await stat(join(dir, MANIFEST_NAME)).catch(() => undefined)) return dir;
	await openCheckpointFromUrl(url, {
		cache: diskModelCache(url, dir),
		onProgress: options.onProgress
	});
	return dir;
}
