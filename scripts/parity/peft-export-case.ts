/**
 * @file One case of the "peft loads ours" check (peft-export.ts is the entry): load the
 * case's model and peft adapter, take one real AdamW step (dLoss/dlogprobs = the case's w,
 * lr 1e-2), score the batch, export the checkpoint to OUT/<case>/tabrl-checkpoint/ with
 * TabRL's logprobs beside it, and read the export back into a fresh model, which must score
 * the same exactly.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Gpu } from '../../src/lib/gpu/device';
import {
	applyCheckpoint,
	captureCheckpoint,
	decodeTrainingCheckpoint,
	encodeTrainingCheckpoint
} from '../../src/lib/grpo/checkpoint';
import { LoraOptimizer } from '../../src/lib/grpo/optimizer';
import { TransformerModel } from '../../src/lib/model/transformer';
import { openParityCase, type ManifestCase } from './parity-runner';

const LR = 1e-2;

export async function exportTabrlCheckpoint(gpu: Gpu, root: string, c: ManifestCase) {
	const { checkpoint, adapter, need, batch } = await openParityCase(root, c);
	const { config } = checkpoint;
	const model = await TransformerModel.create(gpu, config, checkpoint.weights, {
		lora: adapter.config
	});
	const optimizer = new LoraOptimizer(gpu, model.lora!, { lr: LR });
	let fresh: TransformerModel | undefined;
	try {
		model.lora!.write(adapter.params);
		await model.forwardBackward(batch, need('w').data);
		const step = await optimizer.apply();
		const ours = await model.scoreTokens(batch);
		const saved = await captureCheckpoint(model.lora!, optimizer, {
			baseModel: join(root, c.model),
			modelConfig: config
		});
		const files = encodeTrainingCheckpoint(saved);
		const dir = join(root, c.name, 'tabrl-checkpoint');
		await mkdir(dir, { recursive: true });
		for (const [name, bytes] of files) await writeFile(join(dir, name), bytes);

		// Read back from disk into a fresh model: the same logprobs exactly.
		const back = new Map<string, Uint8Array>();
		for (const name of files.keys())
			back.set(name, new Uint8Array(await readFile(join(dir, name))));
		const decoded = await decodeTrainingCheckpoint(back, { modelConfig: config });
		fresh = await TransformerModel.create(gpu, config, checkpoint.weights, { lora: decoded.lora });
		const freshOptimizer = new LoraOptimizer(gpu, fresh.lora!);
		applyCheckpoint(fresh.lora!, freshOptimizer, decoded);
		const again = await fresh.scoreTokens(batch);
		freshOptimizer.release();
		let roundTripMaxAbs = 0;
		for (let i = 0; i < ours.logprobs.length; i++)
			if (Number.isFinite(ours.logprobs[i]))
				roundTripMaxAbs = Math.max(roundTripMaxAbs, Math.abs(ours.logprobs[i] - again.logprobs[i]));

		await writeFile(
			join(root, c.name, 'tabrl-logprobs.json'),
			JSON.stringify({
				B: ours.B,
				T: ours.T,
				logprobs: Array.from(ours.logprobs, (v) => (Number.isFinite(v) ? v : null))
			})
		);
		return {
			name: c.name,
			architecture: config.architecture,
			gradNorm: step.gradNorm,
			optimizerStep: decoded.step,
			files: [...files.keys()],
			tabrlRoundTripMaxAbs: roundTripMaxAbs
		};
	} finally {
		fresh?.release();
		optimizer.release();
		model.release();
	}
}
