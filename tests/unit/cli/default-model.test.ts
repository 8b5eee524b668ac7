/**
 * The bundled model's writer, run twice at once into one folder (as the device scripts'
 * jobs do): no reader ever sees a partial or truncated model.safetensors, and both calls
 * end with the same whole model. No GPU.
 */
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { writeBundledModel } from '../../../scripts/default-model';

const root = await mkdtemp(join(tmpdir(), 'tabrl-default-model-'));
afterAll(() => rm(root, { recursive: true, force: true }));

it('two writers at once: the weights appear whole or not at all, and no staging is left', async () => {
	const dir = join(root, 'tabrl-tiny');
	const weights = join(dir, 'model.safetensors');
	const seen: number[] = [];
	let writing = true;
	const watch = (async () => {
		while (writing) {
			const size = await stat(weights).then(
				(s) => s.size,
				() => -1
			);
			if (size >= 0) seen.push(size);
			await new Promise((r) => setTimeout(r, 1));
		}
	})();
	await Promise.all([writeBundledModel('tabrl-tiny', dir), writeBundledModel('tabrl-tiny', dir)]);
	writing = false;
	await watch;
	const whole = (await stat(weights)).size;
	expect(whole).toBeGreaterThan(5_000_000 * 4);
	expect(seen.every((size) => size === whole)).toBe(true);
	expect(await readdir(root)).toEqual(['tabrl-tiny']);
	const config = JSON.parse(await readFile(join(dir, 'config.json'), 'utf8'));
	expect(config.model_type).toBe('llama');
	// a third call finds it and writes nothing
	const before = (await stat(weights)).mtimeMs;
	await writeBundledModel('tabrl-tiny', dir);
	expect((await stat(weights)).mtimeMs).toBe(before);
}, 120_000);
