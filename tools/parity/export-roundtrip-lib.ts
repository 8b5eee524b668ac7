/**
 * @file One case of the export round trip's TabRL half (export-roundtrip.ts is the entry,
 * export_roundtrip.py the PyTorch half, export-roundtrip-plan.ts the folder): a base folder,
 * a two-step run built as the page's worker builds one (its base named by a Hub resolve URL,
 * so the adapter names a Hub id), its zip, the zip unzipped, `cli export --merge`, and
 * TabRL's logprobs. Tolerance: the PEFT round trip's (1e-4 max abs, f32 against f64).
 */
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { unzipSync } from 'fflate';
import { parseExportArgs, runExport } from '../../scripts/cli/export';
import type { Gpu } from '../../src/lib/gpu/device';
import {
	captureCheckpoint,
	decodeTrainingCheckpoint,
	encodeTrainingCheckpoint
} from '../../src/lib/grpo/store/checkpoint';
import { NodeRunStore } from '../../src/lib/grpo/store/node/run-store';
import { LoraOptimizer } from '../../src/lib/grpo/optimizer';
import {
	packRunArchive,
	readRunContents,
	unpackRunArchive
} from '../../src/lib/grpo/store/run-archive';
import { grpoStep, sftStep } from '../../src/lib/grpo/train-step';
import type { TrainSequence } from '../../src/lib/grpo/pack';
import {
	openCheckpointFromDirectory,
	writeModelFiles
} from '../../src/lib/model/hf/node/checkpoint';
import { TransformerModel } from '../../src/lib/model/transformer/transformer';
import { preset } from '../../src/lib/run';
import { compare, perSequence, sameValues, type SequenceLogprobs } from './peft-roundtrip-lib';
import {
	baseFixture,
	TRAINED_STEP,
	type ExportCase,
	type TabrlLogprobs
} from './export-roundtrip-plan';

/** AdamW's rate (large, so two steps from B = 0 move the logprobs well past the tolerance). */
const LR = 1e-2;

/** A step's metrics as the run's history line and the checkpoint's trainer_state carry them. */
function stepLine(step: number, metrics: Record<string, number>) {
	return { step, recorded_at: new Date().toISOString(), ...metrics };
}

/**
 * One case of `export` (see the file comment): base folder, a two-step run, its zip, the zip
 * unzipped, the merge, TabRL's logprobs. Returns what it did and the checks made here (the
 * exported adapter decodes to the trained weights exactly; the page's importer reads the zip).
 */
export async function exportCase(gpu: Gpu, root: string, c: ExportCase) {
	const at = (p: string) => resolve(root, p);
	const fixture = baseFixture(c);
	await writeModelFiles(at(c.paths.base), fixture.files);
	const checkpoint = await openCheckpointFromDirectory(at(c.paths.base));
	const { config } = checkpoint;
	const pageBase = `https://huggingface.co/${c.baseRepoId}/resolve/main/`;
	// run.json's recipe as the page keeps it: what matters here is its base and LoRA (the
	// steps below are driven directly, at LR); `cli export` reads the base from it.
	const recipe = {
		...preset('letters', '/'),
		baseModel: pageBase,
		lora: { rank: c.lora.rank, alpha: c.lora.alpha },
		seed: c.seed
	};
	const model = await TransformerModel.create(gpu, config, checkpoint.weights, {
		lora: { rank: c.lora.rank, alpha: c.lora.alpha, targetModules: c.lora.targets },
		seed: c.seed
	});
	const optimizer = new LoraOptimizer(gpu, model.lora!, { lr: LR });
	const store = await NodeRunStore.open(at(c.paths.run));
	const steps: Record<string, number>[] = [];
	let trained: Map<string, Float32Array>;
	let scores: Omit<TabrlLogprobs, 'merged'>;
	try {
		const save = async (metrics: Record<string, number>) => {
			const saved = await captureCheckpoint(model.lora!, optimizer, {
				baseModel: pageBase,
				modelConfig: config,
				metrics
			});
			await store.saveCheckpoint(
				saved.step,
				encodeTrainingCheckpoint(saved),
				stepLine(saved.step, metrics)
			);
			steps.push({ step: saved.step, ...metrics });
			return saved;
		};
		const { promptTokens } = c.train;
		const trainMask = (ids: number[]) => ids.map((_, i) => i >= promptTokens);
		const sft = await sftStep(
			model,
			optimizer,
			c.train.sequences.map((ids) => ({ ids, trainMask: trainMask(ids), advantage: 0 }))
		);
		if (sft.skipped) throw new Error(`the SFT step was skipped: ${sft.skipped}`);
		await save({
			'sft/loss': sft.metrics.loss,
			'sft/grad_norm': sft.metrics.gradNorm,
			'sft/tokens': sft.metrics.tokens
		});
		// The group's rollout logprobs: the policy's own (on-policy, as sampled)
		const rollout = await model.scoreTokens(c.train.sequences);
		const group: TrainSequence[] = c.train.sequences.map((ids, b) => ({
			ids,
			trainMask: trainMask(ids),
			rolloutLogprobs: ids.map((_, i) =>
				i === 0 ? null : rollout.logprobs[b * (rollout.T - 1) + i - 1]
			),
			advantage: c.train.advantages[b],
			groupId: 0
		}));
		const grpo = await grpoStep(model, optimizer, group, { loss: 'cispo' });
		if (grpo.skipped) throw new Error(`the GRPO step was skipped: ${grpo.skipped}`);
		const last = await save({
			'train/loss': grpo.metrics.loss,
			'train/grad_norm': grpo.metrics.gradNorm,
			'train/reward': c.train.advantages.reduce((s, a) => s + a, 0) / c.train.advantages.length
		});
		if (last.step !== TRAINED_STEP) throw new Error(`the run ended at step ${last.step}`);
		trained = last.params;
		const base = await model.scoreTokens(c.sequences, { lora: false });
		const lora = await model.scoreTokens(c.sequences);
		scores = {
			base: perSequence(base.logprobs, c.sequences, base.T),
			lora: perSequence(lora.logprobs, c.sequences, lora.T)
		};
		const now = new Date().toISOString();
		await store.writeMeta({
			name: c.runName,
			project: 'tabrl',
			baseModel: pageBase,
			recipe,
			step: TRAINED_STEP,
			lastReward: steps.at(-1)!['train/reward'],
			created: now,
			updated: now
		});
	} finally {
		await store.close();
		optimizer.release();
		model.release();
	}

	// The page's Export (worker/run-host.ts exportRun), then the zip unzipped as a user would.
	const zip = packRunArchive(await readRunContents(new NodeRunStore(at(c.paths.run))));
	await writeFile(at(c.paths.zip), zip);
	const unzipped = unzipSync(zip);
	const entries = Object.keys(unzipped).sort();
	for (const [name, bytes] of Object.entries(unzipped)) {
		const file = at(join(c.paths.export, name));
		await mkdir(dirname(file), { recursive: true });
		await writeFile(file, bytes);
	}
	const imported = unpackRunArchive(zip); // the page's Import reads it back
	const adapterFiles = new Map<string, Uint8Array>();
	for (const name of await readdir(at(c.paths.adapter)))
		adapterFiles.set(name, new Uint8Array(await readFile(join(at(c.paths.adapter), name))));
	const decoded = await decodeTrainingCheckpoint(adapterFiles, {
		modelConfig: config,
		where: c.paths.adapter
	});
	const exportedExact = decoded.step === TRAINED_STEP && sameValues(decoded.params, trained);

	// `cli export --merge` of the unzipped run as it is: its run.json names the base by the
	// page's URL, so --base names the local copy (as a user who downloaded the zip would).
	const exportedRun = at(join(c.paths.export, c.runName));
	const merge = await runExport(
		parseExportArgs([
			'--merge',
			'--run',
			exportedRun,
			'--out',
			at(c.paths.merged),
			'--base',
			at(c.paths.base)
		])
	);

	// TabRL scores the merged folder as a plain model.
	const mergedCheckpoint = await openCheckpointFromDirectory(at(c.paths.merged));
	const mergedModel = await TransformerModel.create(
		gpu,
		mergedCheckpoint.config,
		mergedCheckpoint.weights
	);
	let merged: SequenceLogprobs;
	try {
		const m = await mergedModel.scoreTokens(c.sequences);
		merged = perSequence(m.logprobs, c.sequences, m.T);
	} finally {
		mergedModel.release();
	}
	const logprobs: TabrlLogprobs = { ...scores, merged };
	await writeFile(at(c.paths.logprobs), JSON.stringify(logprobs));
	return {
		name: c.name,
		architecture: config.architecture,
		lora: c.lora,
		steps,
		zipEntries: entries,
		importedSteps: [...imported.checkpoints.keys()],
		exportedExact,
		merge: { step: merge.step, tensors: merge.tensors, merged: merge.merged },
		effect: compare(scores.lora, scores.base).maxAbs,
		mergedVsLora: compare(merged, scores.lora).maxAbs
	};
}
