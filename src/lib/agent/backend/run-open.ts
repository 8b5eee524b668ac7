/**
 * @file What opening a ModelRun needs (ModelRunEnv), checks and applies first: a saved run
 * must have the same base model and warm start, and the warm start (checked against its
 * manifest) becomes the weights to upload (merged) or the adapter a 'stacked' run starts from.
 */
import type { Checkpoint } from '../../model/hf/checkpoint';
import { resolveLoraConfig } from '../../model/transformer/lora';
import { sameLora } from '../../grpo/store/checkpoint';
import { memoryByteSource } from '../../model/hf/byte-source';
import { WarmStartMismatchError } from '../../model/errors';
import { readPeftAdapter, type PeftAdapter } from '../../model/hf/peft-adapter';
import type { WeightSource } from '../../model/types';
import { checkWarmStart, MergedWeights, parseWarmStartManifest } from '../../model/hf/warm-start';
import type { RunMeta } from '../../grpo/store/run-store';
import { AgentError } from '../errors';
import type { WarmStartFiles } from './warm-start-files';
import type { ModelSpec } from './types';
import type { Gpu } from '../../gpu/device';
import type { RunStore } from '../../grpo';
import type { LoadProgress } from '../../util/throttle-progress';
import { withoutTrailingSlash } from '../../util/location';

export interface ModelRunEnv {
	gpu: Gpu;
	/** The base model, opened (config, tokenizer files, weights). */
	base: Checkpoint;
	store: RunStore;
	/** The warm-start adapter's files when the spec names one. */
	warmStart?: WarmStartFiles;
	/** The weights' upload to the GPU, as it goes. */
	onProgress?: (p: LoadProgress) => void;
	/** GPU memory the model may use (TransformerOptions.memoryBudgetBytes): with it, the
	 * update keeps activations where they fit; without, it recomputes them. */
	memoryBudgetBytes?: number;
}

/**
 * The warm start as the model is built from it: the weights to upload (merged, or the
 * base's) and the adapter a 'stacked' run starts from.
 */
export async function applyWarmStart(
	spec: ModelSpec,
	base: Checkpoint,
	files: WarmStartFiles | undefined
): Promise<{ weights: WeightSource; initial?: PeftAdapter }> {
	if (!spec.warmStart || !files) return { weights: base.weights };
	if (files.manifestJson !== undefined)
		await checkWarmStart(
			parseWarmStartManifest(files.manifestJson, files.where),
			base.weights,
			files.adapterBytes,
			files.where,
			base.files.tokenizerJson
		);
	let adapter: PeftAdapter;
	try {
		adapter = await readPeftAdapter(
			base.config,
			files.adapterConfigJson,
			memoryByteSource(files.adapterBytes)
		);
	} catch (error) {
		throw new WarmStartMismatchError(
			`${files.where}: the warm start does not fit this base model: ${(error as Error).message}`
		);
	}
	const mode = spec.warmStart.mode ?? 'merged';
	if (mode === 'merged') return { weights: new MergedWeights(base.config, base.weights, adapter) };
	if (spec.lora && !sameLora(resolveLoraConfig(spec.lora), adapter.config))
		throw new WarmStartMismatchError(
			`${files.where}: a stacked warm start trains its own adapter (r ${adapter.config.rank}, ${adapter.config.targetModules.join(', ')}); the spec asks for another LoRA.`
		);
	return { weights: base.weights, initial: adapter };
}

/** One folder however its location ends: `/models/tabrl-tiny` and `/models/tabrl-tiny/`. */
export const sameLocation = (a: string, b: string) =>
	withoutTrailingSlash(a) === withoutTrailingSlash(b);

/** Refuses to reopen a saved run with another base model or warm start. */
export function checkSameRun(meta: RunMeta | undefined, spec: ModelSpec): void {
	if (!meta) return;
	// the mode too: a merged run's adapter was trained on the merged base, not on the base
	const warm = (w?: { adapter: string; mode?: string }) =>
		w ? `${withoutTrailingSlash(w.adapter)} (${w.mode ?? 'merged'})` : 'none';
	if (
		!sameLocation(meta.baseModel, spec.baseModel) ||
		warm(meta.warmStart) !== warm(spec.warmStart)
	)
		throw new AgentError(
			'run-exists',
			`a run named '${spec.name}' already exists with base model ${meta.baseModel} and warm start ${warm(meta.warmStart)}; ` +
				`give this one another name, or delete that run.`
		);
}
