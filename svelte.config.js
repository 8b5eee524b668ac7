import adapter from '@sveltejs/adapter-static';
import { vitePreprocess } from '@sveltejs/vite-plugin-svelte';

/** @type {import('@sveltejs/kit').Config} */
const config = {
	preprocess: vitePreprocess(),
	kit: {
		// Training runs entirely in the tab: a static site, no server.
		adapter: adapter({ fallback: '200.html' }),
		// Type-check the Node entry points (CLI, benchmarks, parity) and the research harness
		// (experiments/) with the rest.
		typescript: {
			config(config) {
				config.include.push('../scripts/**/*.ts', '../experiments/**/*.ts');
				return config;
			}
		}
	}
};

export default config;
