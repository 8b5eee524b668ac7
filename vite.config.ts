import { sveltekit } from '@sveltejs/kit/vite';
import { defineConfig } from 'vitest/config';

export default defineConfig({
	plugins: [sveltekit()],
	worker: { format: 'es' },
	test: {
		include: ['tests/unit/**/*.test.ts'],
		environment: 'node',
		// SwiftShader is slow and runs on 2 cores: GPU tests get room, and files run
		// two at a time so Dawn devices do not starve each other.
		testTimeout: 120_000,
		hookTimeout: 60_000,
		maxWorkers: 2,
		setupFiles: ['tests/helpers/setup.ts']
	}
});
