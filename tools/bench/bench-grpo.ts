/**
 * @file One full GRPO step, TabRL's side: SmolLM2-135M's shape, random weights, LoRA r 8 on
 * all 7 projections, 8 groups x 8 rollouts (128-token prompts, 256 new tokens at T 1, EOS
 * ignored), seeded rewards, then one update (cispo, dapo, AdamW) in micro-batches of MICRO
 * sequences; bench_grpo_torch.py runs the same in PyTorch. The update runs a micro-batch's
 * shared prompts once (grpoStep's default; --share-prefixes no: every sequence whole, as
 * the PyTorch twin does). Median rollout, train and total ms, tokens/s and peak GPU buffers.
 * One JSON object.
 *
 *   npx tsx tools/bench/bench-grpo.ts [--shape smollm2-135m] [--groups 8] [--group-size 8]
 *       [--prompt 128] [--new 256] [--micro 16] [--reps 3] [--share-prefixes yes|no] [--tiny]
 */
import { acquireGpu } from '../../src/lib/gpu/device';
import { groupAdvantages } from '../../src/lib/grpo/advantages';
import { LoraOptimizer } from '../../src/lib/grpo/optimizer';
import type { TrainSequence } from '../../src/lib/grpo/pack';
import { grpoStep } from '../../src/lib/grpo/train-step';
import { Generator } from '../../src/lib/model/generate/generator';
import { TransformerModel } from '../../src/lib/model/transformer/transformer';
import { makeLog, printJson, runMain } from '../tool-entry';
import {
	lcg,
	median,
	option,
	SHAPES,
	SyntheticWeights,
	TINY,
	TINY_SHAPES,
	trackMemory
} from './bench-support';

const log = makeLog('bench-grpo');
const SHAPE = option('shape') ?? (TINY ? 'tiny-llama' : 'smollm2-135m');
const GROUPS = Number(option('groups') ?? (TINY ? 2 : 8));
const GROUP_SIZE = Number(option('group-size') ?? (TINY ? 2 : 8));
const PROMPT = Number(option('prompt') ?? (TINY ? 8 : 128));
const NEW = Number(option('new') ?? (TINY ? 8 : 256));
const MICRO = Number(option('micro') ?? (TINY ? 2 : 16));
const REPS = Number(option('reps') ?? (TINY ? 1 : 3));
const SHARE = option('share-prefixes') ?? 'yes';

async function main() {
	if (SHARE !== 'yes' && SHARE !== 'no')
		throw new Error(`--share-prefixes yes or no, not ${SHARE}`);
	const config = (TINY ? TINY_SHAPES : SHAPES)[SHAPE];
	if (!config) throw new Error(`unknown --shape ${SHAPE}`);
	const gpu = await acquireGpu();
	const memory = trackMemory(gpu);
	const model = await TransformerModel.create(gpu, config, new SyntheticWeights(config), {
		lora: { rank: 8, alpha: 16 },
		seed: 1,
		activations: 'keep'
	});
	const optimizer = new LoraOptimizer(gpu, model.lora!);
	const generator = new Generator(model, { maxBatch: GROUPS * GROUP_SIZE });
	const rand = lcg(2024);
	const prompts = Array.from({ length: GROUPS }, () =>
		Array.from({ length: PROMPT }, () => Math.floor(rand() * config.vocabSize))
	);
	const T = PROMPT + NEW;

	async function step(seed: number) {
		const t0 = performance.now();
		const rollouts = await generator.generate(
			prompts.flatMap((p) => Array.from({ length: GROUP_SIZE }, () => p)),
			{ maxTokens: NEW, temperature: 1, ignoreEos: true, seed }
		);
		const rolloutMs = performance.now() - t0;
		const short = rollouts.findIndex((r) => r.ids.length !== NEW);
		if (short >= 0)
			throw new Error(
				`rollout ${short} has ${rollouts[short].ids.length} new tokens, not ${NEW}: ` +
					'both sides must do the same work (is ignoreEos honoured?)'
			);
		const rewards = lcg(seed + 7);
		const sequences: TrainSequence[] = [];
		for (let g = 0; g < GROUPS; g++) {
			const group = rollouts.slice(g * GROUP_SIZE, (g + 1) * GROUP_SIZE);
			const { advantages } = groupAdvantages(group.map(() => rewards()));
			group.forEach((r, i) => {
				const ids = [...r.promptIds, ...r.ids];
				const trainMask = new Uint8Array(ids.length).fill(1, r.promptIds.length);
				const rolloutLogprobs = new Float32Array(ids.length).fill(NaN);
				rolloutLogprobs.set(r.logprobs, r.promptIds.length);
				sequences.push({ ids, trainMask, rolloutLogprobs, advantage: advantages[i] });
			});
		}
		const t1 = performance.now();
		const result = await grpoStep(model, optimizer, sequences, {
			lr: 5e-6,
			tokenBudget: MICRO * T,
			maxRows: MICRO,
			sharePrefixes: SHARE === 'yes'
		});
		const trainMs = performance.now() - t1;
		if (result.skipped) throw new Error(`the step was skipped: ${result.skipped}`);
		return {
			rolloutMs,
			trainMs,
			totalMs: performance.now() - t0,
			microBatches: result.metrics.microBatches,
			trainedTokens: result.metrics.tokens,
			loss: result.metrics.loss,
			gradNorm: result.metrics.gradNorm,
			forwardBackwardMs: result.metrics.times.forwardBackwardMs,
			optimizerMs: result.metrics.times.optimizerMs
		};
	}

	log(`${SHAPE}: warm-up step`);
	await step(1);
	memory.resetPeak();
	const steps: Awaited<ReturnType<typeof step>>[] = [];
	for (let i = 0; i < REPS; i++) {
		steps.push(await step(100 + i));
		log(
			`  step ${i}: rollout ${steps[i].rolloutMs.toFixed(0)} ms, train ${steps[i].trainMs.toFixed(0)} ms`
		);
	}
	const B = GROUPS * GROUP_SIZE;
	const m = (k: keyof (typeof steps)[0]) => median(steps.map((s) => s[k] as number));
	const out = {
		bench: 'one GRPO step: rollouts (Generator.generate) + one update (grpoStep)',
		tool: 'tools/bench/bench-grpo.ts',
		date: new Date().toISOString(),
		device: gpu.adapter,
		shape: SHAPE,
		work: {
			groups: GROUPS,
			groupSize: GROUP_SIZE,
			promptTokens: PROMPT,
			newTokens: NEW,
			microBatchSequences: MICRO,
			lora: { rank: 8, alpha: 16, targets: 'all 7 projections' },
			loss: 'cispo (eps 1, eps_high 4), dapo aggregation',
			optimizer: 'AdamW lr 5e-6, betas 0.9/0.99, wd 0.1, grad-norm clip 0.1',
			activations: 'keep',
			sharedPrefixes: SHARE === 'yes'
		},
		rolloutMs: m('rolloutMs'),
		trainMs: m('trainMs'),
		totalMs: m('totalMs'),
		forwardBackwardMs: m('forwardBackwardMs'),
		optimizerMs: m('optimizerMs'),
		rolloutTokensPerSecond: Math.round((B * NEW) / (m('rolloutMs') / 1000)),
		trainTokensPerSecond: Math.round((B * T) / (m('trainMs') / 1000)),
		peakLiveBytes: memory.state.peak,
		steps
	};
	generator.release();
	optimizer.release();
	model.release();
	gpu.destroy();
	printJson(out);
}

runMain(main);
