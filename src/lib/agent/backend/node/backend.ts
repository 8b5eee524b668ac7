/**
 * @file Node only (imports node:fs through the run store): ART's `LocalBackend` for a
 * server or a script. The backend runs in this process on Dawn; base models are folders on
 * disk; each run lives in `PATH/<project>/models/<name>/` as ART lays it out (history.jsonl,
 * checkpoints/<step>/ with PEFT files), unless `runDir` says otherwise (the CLI's --out).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { readWarmStartFiles } from '../warm-start-files';
import { acquireGpu, type Gpu } from '../../../gpu/device';
import { openCheckpointFromDirectory } from '../../../model/hf/node/checkpoint';
import { NodeRunStore } from '../../../grpo/store/node/run-store';
import { DelegatingBackend } from '../delegate';
import { createLocalBackend } from '../local';
import type { ModelSpec } from '../types';
import type { LoadProgress } from '../../../util/throttle-progress';

export interface LocalBackendOptions {
	/** Where runs are kept (default '.tabrl', as ART's '.art'). */
	path?: string;
	/** The folder of one run; default `path/<project>/models/<name>`. */
	runDir?: (spec: ModelSpec) => string;
	/** Where the GPU comes from (default: acquireGpu()). */
	acquireGpu?: () => Promise<Gpu>;
	/** What a run's store found and repaired on opening (torn history lines, a stale lock,
	 * a crashed save's leftovers); default console.warn. */
	onWarning?: (message: string) => void;
	/** How a registering model's load goes (its weights' upload to the GPU). */
	onLoadProgress?: (spec: ModelSpec, progress: LoadProgress) => void;
	/** GPU memory each model may use (a GPU server's, e.g. 70 GiB of an 80 GiB card): training
	 * then keeps activations where they fit instead of recomputing them. */
	memoryBudgetBytes?: number;
}

export class LocalBackend extends DelegatingBackend {
	constructor(options: LocalBackendOptions = {}) {
		const path = options.path ?? '.tabrl';
		const runDir = options.runDir ?? ((s: ModelSpec) => join(path, s.project, 'models', s.name));
		super(
			createLocalBackend({
				acquireGpu: options.acquireGpu ?? (() => acquireGpu()),
				openBaseModel: (spec) => openCheckpointFromDirectory(spec.baseModel),
				openStore: (spec) => NodeRunStore.open(runDir(spec), { onWarning: options.onWarning }),
				openWarmStart: (location) =>
					readWarmStartFiles(location, async (name) => {
						try {
							return new Uint8Array(await readFile(join(location, name)));
						} catch (error) {
							if ((error as { code?: string }).code === 'ENOENT') return undefined;
							throw error;
						}
					}),
				onLoadProgress: options.onLoadProgress,
				memoryBudgetBytes: options.memoryBudgetBytes
			})
		);
	}
}
