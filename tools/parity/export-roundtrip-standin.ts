/**
 * @file The CPU stand-in for export_roundtrip.py (`selftest`): the zip's entries, the
 * adapter_config.json peft reads, the merge against an f64 merge, and TabRL's logprobs
 * against the f64 CPU reference model. It reads the adapter with TabRL's own reader, so
 * only the GPU machine run proves peft's loading.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { unzipSync } from 'fflate';
import { toTokenBatch } from '../../src/lib/model/transformer/batch';
import { memoryByteSource } from '../../src/lib/model/hf/byte-source';
import { peftName } from '../../src/lib/model/transformer/lora';
import { openCheckpointFromDirectory } from '../../src/lib/model/hf/node/checkpoint';
import {
	ADAPTER_CONFIG_FILE,
	ADAPTER_WEIGHTS_FILE,
	readPeftAdapter
} from '../../src/lib/model/hf/peft-adapter';
import { projectionPath, projectionShape } from '../../src/lib/model/hf/weight-spec';
import { referenceLogprobs } from '../../src/lib/testing/reference';
import {
	compare,
	perSequence,
	readJson,
	within,
	type LogprobComparison,
	type SequenceLogprobs
} from './peft-roundtrip-lib';
import {
	baseFixture,
	expectedZipEntries,
	type ExportCase,
	type ExportPlan,
	type TabrlLogprobs
} from './export-roundtrip-plan';

/** The fields of peft's LoraConfig (and PeftConfig) a recent peft saves: adapter_config.json
 * may hold these only (peft refuses a config with others). */
export const PEFT_LORA_FIELDS = new Set([
	'alpha_pattern',
	'auto_mapping',
	'base_model_name_or_path',
	'bias',
	'corda_config',
	'eva_config',
	'exclude_modules',
	'fan_in_fan_out',
	'inference_mode',
	'init_lora_weights',
	'layer_replication',
	'layers_pattern',
	'layers_to_transform',
	'loftq_config',
	'lora_alpha',
	'lora_bias',
	'lora_dropout',
	'megatron_config',
	'megatron_core',
	'modules_to_save',
	'peft_type',
	'qalora_group_size',
	'r',
	'rank_pattern',
	'revision',
	'target_modules',
	'target_parameters',
	'task_type',
	'trainable_token_indices',
	'use_dora',
	'use_qalora',
	'use_rslora',
	'peft_version'
]);

interface MergeCheck {
	/** max over merged tensors of max |got - want| / (atol + rtol |want|): <= 1 passes */
	worstRatio: number;
	mergedTensors: number;
	/** tensors other than the merged ones that differ from the base's (must be none) */
	changedOthers: string[];
	/** file names: the base's non-weight files + model.safetensors */
	files: string[];
	filesAsBase: boolean;
}

/** The merged folder against W + (alpha / r) B A computed here in f64. */
async function checkMerge(
	root: string,
	c: ExportCase,
	plan: ExportPlan,
	adapter: Awaited<ReturnType<typeof readPeftAdapter>>
): Promise<MergeCheck> {
	const at = (p: string) => resolve(root, p);
	const before = await openCheckpointFromDirectory(at(c.paths.base));
	const after = await openCheckpointFromDirectory(at(c.paths.merged));
	const { config } = before;
	const { rank, alpha } = adapter.config;
	const scale = alpha / rank;
	let worstRatio = 0;
	const targeted = new Set<string>();
	for (let layer = 0; layer < config.numLayers; layer++)
		for (const m of adapter.config.targetModules) {
			const name = `${projectionPath(layer, m)}.weight`;
			targeted.add(name);
			const [out, inF] = projectionShape(config, m);
			const w = await before.weights.readF32(name);
			const got = await after.weights.readF32(name);
			const a = adapter.params.get(peftName(layer, m, 'A'))!;
			const b = adapter.params.get(peftName(layer, m, 'B'))!;
			for (let o = 0; o < out; o++)
				for (let i = 0; i < inF; i++) {
					let s = 0;
					for (let k = 0; k < rank; k++) s += b[o * rank + k] * a[k * inF + i];
					const want = w[o * inF + i] + scale * s;
					const ratio =
						Math.abs(got[o * inF + i] - want) / (plan.mergeAtol + plan.mergeRtol * Math.abs(want));
					worstRatio = Math.max(worstRatio, Number.isNaN(ratio) ? Infinity : ratio);
				}
		}
	const changedOthers: string[] = [];
	for (const t of before.weights.list()) {
		if (targeted.has(t.name)) continue;
		const x = await before.weights.readF32(t.name);
		const y = await after.weights.readF32(t.name);
		if (x.length !== y.length || x.some((v, i) => !Object.is(v, y[i]))) changedOthers.push(t.name);
	}
	const isWeight = (n: string) =>
		n.endsWith('.safetensors') || n.endsWith('.safetensors.index.json');
	const files = (await readdir(at(c.paths.merged))).sort();
	const wantFiles = [
		...(await readdir(at(c.paths.base))).filter((n) => !isWeight(n)),
		'model.safetensors'
	].sort();
	return {
		worstRatio,
		mergedTensors: targeted.size,
		changedOthers,
		files,
		filesAsBase: files.join() === wantFiles.join()
	};
}

/** The f64 CPU reference's logprobs (src/lib/testing/reference.ts) for `tensors`. */
function referenceScores(
	c: ExportCase,
	tensors: Map<string, Float32Array>,
	lora?: { scale: number; params: ReadonlyMap<string, Float32Array> }
): SequenceLogprobs {
	const fixture = baseFixture(c);
	const batch = toTokenBatch(c.sequences);
	return perSequence(referenceLogprobs(fixture.config, tensors, batch, lora), c.sequences, batch.T);
}

export interface StandInCase {
	name: string;
	zipEntries: { got: string[]; want: string[]; ok: boolean };
	adapterConfig: {
		unknownKeys: string[];
		base_model_name_or_path: unknown;
		r: unknown;
		lora_alpha: unknown;
		target_modules: unknown;
		ok: boolean;
	};
	merge: MergeCheck & { ok: boolean };
	/** TabRL against the f64 reference: with the adapter, base, the merged folder. */
	lora: LogprobComparison;
	base: LogprobComparison;
	merged: LogprobComparison;
	/** TabRL's merged folder against TabRL's adapter (the merge changes nothing measurable) */
	mergedVsLora: LogprobComparison;
	adapterEffect: number;
	pass: boolean;
}

/**
 * What export_roundtrip.py checks, where there is no PyTorch: the zip's entries, the
 * adapter_config.json peft reads, the merge against an f64 merge, and TabRL's logprobs
 * against the f64 CPU reference model (standing in for transformers + peft: it reads the
 * adapter with TabRL's own reader, so only the GPU machine run proves peft's loading).
 */
export async function checkStandIn(root: string): Promise<{ cases: StandInCase[]; pass: boolean }> {
	const plan = await readJson<ExportPlan>(join(root, 'plan.json'));
	const at = (p: string) => resolve(root, p);
	const cases: StandInCase[] = [];
	for (const c of plan.cases) {
		const fixture = baseFixture(c);
		const config = fixture.config;
		const got = Object.keys(unzipSync(new Uint8Array(await readFile(at(c.paths.zip))))).sort();
		const want = expectedZipEntries(c);
		const configText = await readFile(join(at(c.paths.adapter), ADAPTER_CONFIG_FILE), 'utf8');
		const raw = JSON.parse(configText) as Record<string, unknown>;
		const unknownKeys = Object.keys(raw).filter((k) => !PEFT_LORA_FIELDS.has(k));
		const targets = raw.target_modules as string[];
		const adapterConfig = {
			unknownKeys,
			base_model_name_or_path: raw.base_model_name_or_path,
			r: raw.r,
			lora_alpha: raw.lora_alpha,
			target_modules: raw.target_modules,
			ok:
				unknownKeys.length === 0 &&
				raw.peft_type === 'LORA' &&
				raw.task_type === 'CAUSAL_LM' &&
				raw.base_model_name_or_path === c.baseRepoId &&
				raw.r === c.lora.rank &&
				raw.lora_alpha === c.lora.alpha &&
				Array.isArray(targets) &&
				[...targets].sort().join() === [...c.lora.targets].sort().join() &&
				raw.use_rslora === false &&
				raw.use_dora === false &&
				raw.lora_dropout === 0 &&
				raw.bias === 'none'
		};
		const adapter = await readPeftAdapter(
			config,
			configText,
			memoryByteSource(
				new Uint8Array(await readFile(join(at(c.paths.adapter), ADAPTER_WEIGHTS_FILE)))
			)
		);
		const mergeCheck = await checkMerge(root, c, plan, adapter);
		const merge = {
			...mergeCheck,
			ok:
				mergeCheck.worstRatio <= 1 &&
				mergeCheck.mergedTensors === config.numLayers * c.lora.targets.length &&
				mergeCheck.changedOthers.length === 0 &&
				mergeCheck.filesAsBase
		};
		const ours = await readJson<TabrlLogprobs>(at(c.paths.logprobs));
		const mergedOpen = await openCheckpointFromDirectory(at(c.paths.merged));
		const mergedTensors = new Map<string, Float32Array>();
		for (const t of mergedOpen.weights.list())
			mergedTensors.set(t.name, await mergedOpen.weights.readF32(t.name));
		const refBase = referenceScores(c, fixture.tensors);
		const refLora = referenceScores(c, fixture.tensors, {
			scale: adapter.config.alpha / adapter.config.rank,
			params: adapter.params
		});
		const refMerged = referenceScores(c, mergedTensors);
		const r = {
			lora: compare(ours.lora, refLora),
			base: compare(ours.base, refBase),
			merged: compare(ours.merged, refMerged),
			mergedVsLora: compare(ours.merged, ours.lora),
			adapterEffect: compare(refLora, refBase).maxAbs
		};
		cases.push({
			name: c.name,
			zipEntries: { got, want, ok: got.join() === want.join() },
			adapterConfig,
			merge,
			...r,
			pass:
				got.join() === want.join() &&
				adapterConfig.ok &&
				merge.ok &&
				within(r.lora) &&
				within(r.base) &&
				within(r.merged) &&
				within(r.mergedVsLora) &&
				r.adapterEffect >= plan.minAdapterEffect
		});
	}
	return { cases, pass: cases.length > 0 && cases.every((c) => c.pass) };
}
