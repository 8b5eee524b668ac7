/**
 * @file A CPU stand-in for peft_roundtrip.py (`peft-roundtrip.ts selftest`): writes what the
 * Python side writes, where it writes it, with the f64 reference model in place of
 * transformers + peft: TabRL's checkpoints scored, and per case random adapters in peft's
 * layout with their logprobs. It reads adapters with TabRL's own reader, so only the GPU
 * machine run proves peft's loading.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Rng } from '../../src/lib/util/random';
import { memoryByteSource } from '../../src/lib/model/hf/byte-source';
import { toTokenBatch } from '../../src/lib/model/transformer/batch';
import { makeFixture } from '../../src/lib/testing/fixtures';
import { peftName } from '../../src/lib/model/transformer/lora';
import {
	ADAPTER_CONFIG_FILE,
	ADAPTER_WEIGHTS_FILE,
	readPeftAdapter
} from '../../src/lib/model/hf/peft-adapter';
import { referenceLogprobs, type ReferenceLora } from '../../src/lib/testing/reference';
import { encodeSafetensors } from '../../src/lib/model/hf/safetensors-writer';
import {
	PROJECTIONS,
	projectionShape,
	type ProjectionName
} from '../../src/lib/model/hf/weight-spec';
import { checkpointName } from '../../src/lib/grpo/store/run-store';
import {
	caseDir,
	compare,
	perSequence,
	readJson,
	runDir,
	TRAINED_STEP,
	within,
	type Plan,
	type PythonReport,
	type RoundTripCase,
	type SequenceLogprobs
} from './peft-roundtrip-lib';

function referenceScores(c: RoundTripCase, lora?: ReferenceLora): SequenceLogprobs {
	const fixture = makeFixture(c.fixture, { seed: c.seed, numLayers: c.numLayers });
	const batch = toTokenBatch(c.sequences);
	return perSequence(
		referenceLogprobs(fixture.config, fixture.tensors, batch, lora),
		c.sequences,
		batch.T
	);
}

/** adapter_config.json as a recent peft's save_pretrained writes it (fields it adds that
 * TabRL does not write included, values at their defaults). */
function peftStyleConfig(
	r: number,
	alpha: number,
	dropout: number,
	targets: string[],
	base: string
) {
	return {
		alpha_pattern: {},
		auto_mapping: null,
		base_model_name_or_path: base,
		bias: 'none',
		corda_config: null,
		eva_config: null,
		exclude_modules: null,
		fan_in_fan_out: false,
		inference_mode: true,
		init_lora_weights: true,
		layer_replication: null,
		layers_pattern: null,
		layers_to_transform: null,
		loftq_config: {},
		lora_alpha: alpha,
		lora_bias: false,
		lora_dropout: dropout,
		megatron_config: null,
		megatron_core: 'megatron.core',
		modules_to_save: null,
		peft_type: 'LORA',
		qalora_group_size: 16,
		r,
		rank_pattern: {},
		revision: null,
		target_modules: targets,
		target_parameters: null,
		task_type: 'CAUSAL_LM',
		trainable_token_indices: null,
		use_dora: false,
		use_qalora: false,
		use_rslora: false
	};
}

export async function writeStandIn(root: string): Promise<void> {
	const plan = await readJson<Plan>(join(root, 'plan.json'));
	const report: PythonReport = {
		versions: { standIn: 'CPU f64 reference (src/lib/testing/reference.ts), not peft' },
		tabrlToPeft: [],
		peftAdapters: []
	};
	for (const c of plan.cases) {
		const fixture = makeFixture(c.fixture, { seed: c.seed, numLayers: c.numLayers });
		const config = fixture.config;

		// TabRL's checkpoint, scored by the reference.
		const ckpt = join(runDir(root, c), 'checkpoints', checkpointName(TRAINED_STEP));
		const adapter = await readPeftAdapter(
			config,
			await readFile(join(ckpt, ADAPTER_CONFIG_FILE), 'utf8'),
			memoryByteSource(new Uint8Array(await readFile(join(ckpt, ADAPTER_WEIGHTS_FILE))))
		);
		const ours = await readJson<{ base: SequenceLogprobs; lora: SequenceLogprobs }>(
			join(caseDir(root, c), 'tabrl-logprobs.json')
		);
		const refLora = referenceScores(c, {
			scale: adapter.config.alpha / adapter.config.rank,
			params: adapter.params
		});
		const refBase = referenceScores(c);
		const lora = compare(ours.lora, refLora);
		const base = compare(ours.base, refBase);
		const effect = compare(refLora, refBase).maxAbs;
		report.tabrlToPeft.push({
			name: c.name,
			lora_max_abs: lora.maxAbs,
			base_max_abs: base.maxAbs,
			adapter_effect_max_abs: effect,
			pass: within(lora) && within(base) && effect >= plan.minAdapterEffect
		});

		// peft-style adapters with random A and B.
		for (const [i, spec] of plan.peftAdapters.entries()) {
			const targets = (
				spec.target_modules === 'all-linear' ? [...PROJECTIONS] : spec.target_modules
			) as ProjectionName[];
			const rng = new Rng(1000 * c.seed + i);
			const params = new Map<string, Float32Array>();
			const tensors = [];
			for (let layer = 0; layer < config.numLayers; layer++)
				for (const m of targets) {
					const [out, inF] = projectionShape(config, m);
					for (const [which, shape, std] of [
						['A', [spec.r, inF], 1 / Math.sqrt(inF)],
						['B', [out, spec.r], 0.1]
					] as const) {
						const name = peftName(layer, m, which);
						const data = rng.normals(shape[0] * shape[1], std);
						params.set(name, data);
						tensors.push({ name, dtype: 'F32' as const, shape: [...shape], data });
					}
				}
			const dir = join(c.name, 'peft', spec.name);
			await mkdir(join(root, dir), { recursive: true });
			// peft saves 'all-linear' resolved to every matched module's full path
			// (model.layers.0.self_attn.q_proj, ...), in no particular order.
			const saved =
				spec.target_modules === 'all-linear'
					? [...params.keys()]
							.filter((n) => n.endsWith('.lora_A.weight'))
							.map((n) => n.slice('base_model.model.'.length, -'.lora_A.weight'.length))
							.reverse()
					: targets;
			await writeFile(
				join(root, dir, ADAPTER_CONFIG_FILE),
				JSON.stringify(
					peftStyleConfig(spec.r, spec.lora_alpha, spec.lora_dropout, saved, 'stand-in'),
					null,
					2
				)
			);
			await writeFile(
				join(root, dir, ADAPTER_WEIGHTS_FILE),
				encodeSafetensors(tensors, { format: 'pt' })
			);
			await writeFile(join(root, dir, 'README.md'), '---\nlibrary_name: peft\n---\n');
			report.peftAdapters.push({
				case: c.name,
				name: spec.name,
				dir,
				r: spec.r,
				lora_alpha: spec.lora_alpha,
				target_modules: saved,
				logprobs: referenceScores(c, { scale: spec.lora_alpha / spec.r, params }),
				base_logprobs: refBase
			});
		}
	}
	report.pass = report.tabrlToPeft.every((r) => r.pass === true);
	await writeFile(join(root, 'python-report.json'), JSON.stringify(report, null, 1) + '\n');
}
