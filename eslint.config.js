import js from '@eslint/js';
import svelte from 'eslint-plugin-svelte';
import globals from 'globals';
import ts from 'typescript-eslint';

/**
 * The layered house (docs/ARCHITECTURE.md), bottom to top: a file imports only from its own
 * layer or the layers below; only src/lib/testing imports src/lib/testing, so the app bundle
 * never holds test fixtures. Both spellings are caught: '$lib/<layer>/..' and relative paths
 * that climb to src/lib and go down into a layer, written for each depth of a file below its
 * layer's folder (so '../model' inside a layer's own subfolder is not taken for the layer).
 */
const LAYERS = [
	['util'],
	['gpu'],
	['model'],
	['serve'],
	['grpo'],
	['agent'],
	['run'],
	['worker'],
	['ui', 'routes']
];
const MAX_DEPTH = 6; // folders below a layer's own folder that get a rule (the deepest now: 1)

function layering() {
	const climb = (n) => '\\.\\./'.repeat(n);
	const blocks = [];
	LAYERS.forEach((own, i) => {
		const above = LAYERS.slice(i + 1).flat();
		const aboveInLib = above.filter((l) => l !== 'routes');
		for (const layer of own) {
			const inRoutes = layer === 'routes';
			for (let depth = 0; depth <= MAX_DEPTH; depth++) {
				// The relative path from a file `depth` folders below the layer's folder to
				// src/lib/, and to src/.
				const toLib = inRoutes ? `${climb(depth + 1)}lib/` : climb(depth + 1);
				const toSrc = climb(depth + (inRoutes ? 1 : 2));
				const patterns = [
					{
						regex: `^(\\$lib/|${toLib})testing(/|$)`,
						message: 'src/lib/testing is for tests and scripts only: the app must not bundle it.'
					}
				];
				if (aboveInLib.length)
					patterns.push({
						regex: `^(\\$lib/|${toLib})(${aboveInLib.join('|')})(/|$)`,
						message: `${layer} sits below ${above.join(', ')}: a layer imports only from its own layer and the layers below (ARCHITECTURE.md).`
					});
				if (above.includes('routes'))
					patterns.push({
						regex: `^${toSrc}routes(/|$)`,
						message: `${layer} sits below ${above.join(', ')}: a layer imports only from its own layer and the layers below (ARCHITECTURE.md).`
					});
				blocks.push({
					files: [`${inRoutes ? 'src/routes' : `src/lib/${layer}`}/${'*/'.repeat(depth)}*`],
					rules: { 'no-restricted-imports': ['error', { patterns }] }
				});
			}
		}
	});
	return blocks;
}

export default ts.config(
	js.configs.recommended,
	...ts.configs.recommended,
	...svelte.configs['flat/recommended'],
	{ languageOptions: { globals: { ...globals.browser, ...globals.node } } },
	{
		files: ['**/*.svelte', '**/*.svelte.ts'],
		languageOptions: { parserOptions: { parser: ts.parser } }
	},
	{
		rules: {
			'@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }]
		}
	},
	...layering(),
	{
		// Node-only code (disk, HTTP, threads) lives in folders named node/: nothing outside
		// one imports node: builtins or a node/ folder, so the browser bundle cannot reach them
		// (its own rule name, so the layers' no-restricted-imports above stays in force).
		files: ['src/**/*.ts', 'src/**/*.svelte'],
		ignores: ['src/**/node/**', 'src/lib/testing/**'],
		rules: {
			// import() too: a dynamic import reaches the bundle as surely as a static one
			'no-restricted-syntax': [
				'error',
				{
					selector: 'ImportExpression[source.value=/^node:|(^|\\/)node(\\/|$)/]',
					message:
						'Node-only code lives in node/ folders and is imported only from them: the browser bundle must not reach it.'
				}
			],
			'@typescript-eslint/no-restricted-imports': [
				'error',
				{
					patterns: [
						{
							regex: '^node:|(^|/)node(/|$)',
							message:
								'Node-only code lives in node/ folders and is imported only from them (and from scripts and tests): the browser bundle must not reach it.'
						}
					]
				}
			]
		}
	},
	{ ignores: ['build/', '.svelte-kit/', '.gpu/', 'node_modules/'] }
);
