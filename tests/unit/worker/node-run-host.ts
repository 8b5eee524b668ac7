/**
 * A run host (src/lib/worker/run-host.ts) over the Node LocalBackend, each run's files in
 * `runs/<name>`: the worker's host as the page uses it, on Dawn, for the run-host tests.
 */
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { LocalBackend } from '../../../src/lib/agent/backend/node/backend';
import type { Gpu } from '../../../src/lib/gpu/device';
import { NodeRunStore } from '../../../src/lib/grpo/store/node/run-store';
import type { RunMeta } from '../../../src/lib/grpo/store/run-store';
import { createRunHost, type RunHost } from '../../../src/lib/worker/run-host';

/** `gpu`: the backend's device getter, when a test loses the device (as the worker passes its own). */
export function nodeRunHost(
	backend: LocalBackend,
	runs: string,
	project: string,
	gpu?: () => Promise<Gpu>
): RunHost {
	return createRunHost({
		backend,
		gpu,
		project,
		resolveLocation: (location) => location,
		store: async (name, options) =>
			options?.write ? NodeRunStore.open(join(runs, name)) : new NodeRunStore(join(runs, name)),
		async listRuns() {
			const names = await readdir(runs).catch(() => [] as string[]);
			const out: RunMeta[] = [];
			for (const name of names) {
				const meta = await new NodeRunStore(join(runs, name)).readMeta();
				if (meta) out.push(meta);
			}
			return out;
		},
		deleteRun: (name) => rm(join(runs, name), { recursive: true, force: true })
	});
}
