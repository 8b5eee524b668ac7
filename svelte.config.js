import adapter from '@sveltejs/adapter-static';
import { vitePreprocess } from '@sveltejs/vite-plugin-svelte';

/** @type {import('@sveltejs/kit').Config} */
const config = {
	preprocess: vitePreprocess(),
	kit: {
		// Training runs entirely in the tab: a static site, no server.
		adapter: adapter({ fallback: '200.html' }),
		// Type-check the Node entry points (the CLI in scripts/; benchmarks, parity and asset
		// makers in tools/) with the rest.
		typescript: {
			config(config) {
				config.include.push('../scripts/**/*.ts', '../tools/**/*.ts');
				return config;
			}
		}
	}
};

export default config;
