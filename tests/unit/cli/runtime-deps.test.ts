/**
 * The CLI installs as a tool (`npm install --omit=dev`, then `npm run -s cli -- serve|train|
 * play`): every package scripts/cli.ts reaches at run time is a dependency, not a
 * devDependency. The static imports come from esbuild's bundle of the CLI (its metafile's
 * external packages); two are reached at run time only and named here: `webgpu` (Dawn,
 * imported by name so browser bundles skip it: gpu/node/dawn.ts) and `tsx` (the `cli` script
 * and the tokenizer thread run the TypeScript through it: model/tokenizer/node/tokenizer-thread.ts).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../../..');

/** 'a/b' -> 'a', '@s/a/b' -> '@s/a'. */
const packageOf = (path: string) =>
	path
		.split('/')
		.slice(0, path.startsWith('@') ? 2 : 1)
		.join('/');

describe('the CLI at run time', () => {
	it('needs only dependencies (installable with --omit=dev)', async () => {
		const pkg = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8'));
		const result = await build({
			entryPoints: [join(ROOT, 'scripts/cli.ts')],
			bundle: true,
			platform: 'node',
			format: 'esm',
			write: false,
			metafile: true,
			packages: 'external',
			logLevel: 'silent'
		});
		const imported = new Set<string>();
		for (const output of Object.values(result.metafile.outputs))
			for (const i of output.imports)
				if (i.external && !i.path.startsWith('node:')) imported.add(packageOf(i.path));
		expect(imported.size).toBeGreaterThan(3); // (the bundle was read: openai, tokenizers, ...)
		const needed = [...imported, 'webgpu', 'tsx'].sort();
		const missing = needed.filter((name) => !(name in (pkg.dependencies ?? {})));
		expect(missing, `needed at run time but not in dependencies: ${missing.join(', ')}`).toEqual(
			[]
		);
		expect(pkg.scripts.cli).toMatch(/^tsx /);
	});
});
