/**
 * @file The update of a tic-tac-toe GRPO step with and without shared prefixes, side by side:
 * GAMES games of legal play (demonstrations.ts) in the bundled model's chat template, the
 * agent's moves trained, seeded advantages, on-policy rollout logprobs; grpoStep as the
 * page's preset runs it (cispo, KL 0.05 against the LoRA-off model, LoRA r 64, micro-batches
 * of TOKEN_BUDGET padded tokens) at lr 0, so every rep sees the same weights. Alternating
 * `whole` (every sequence whole, the adapter applied on top), `shared` (shared prefixes run
 * once) and `merged` (shared, and the rollout's merged copy of the projections, x W'^T and
 * dy W') reps: median, min and max ms of the step, its reference forward and its forward +
 * backward; the steps' loss and KL (they should agree to f32 noise); the micro-batches'
 * prefixes. --tiny: a width-32 model of the same vocabulary (SwiftShader). --profile: one
 * more step of each configuration with per-kernel GPU time (a timed pass per dispatch: the
 * step's wall time then means nothing), its kernels' total beside the step's wall time.
 * One JSON object.
 *
 *   npx tsx tools/bench/bench-update.ts [--games 512] [--reps 3] [--token-budget 32768] [--tiny] [--profile]
 */
import { acquireGpu } from '../../src/lib/gpu/device';
import { legalPlayTranscripts } from '../../src/lib/agent/envs/tictactoe/demonstrations';
import { sftSequence } from '../../src/lib/agent/backend/sft-sequences';
import { LoraOptimizer } from '../../src/lib/grpo/optimizer';
import { packSequences, type TrainSequence } from '../../src/lib/grpo/pack';
import { grpoStep, type GrpoStepConfig } from '../../src/lib/grpo/train-step';
import { Generator } from '../../src/lib/model/generate/generator';
import { openCheckpointFromDirectory } from '../../src/lib/model/hf/node/checkpoint';
import { Tokenizer } from '../../src/lib/model/tokenizer/tokenizer';
import { TransformerModel } from '../../src/lib/model/transformer/transformer';
import { DEFAULT_MODEL_DIR, ensureBundledModel } from '../../scripts/default-model';
import { makeLog, printJson, runMain } from '../tool-entry';
import { KernelProfiler } from '../../src/lib/gpu/profiler';
import { flag, lcg, median, option, SyntheticWeights, TINY, benchHeader } from './bench-support';

const log = makeLog('bench-update');
const GAMES = Number(option('games') ?? (TINY ? 24 : 512));
const REPS = Number(option('reps') ?? (TINY ? 2 : 3));
const TOKEN_BUDGET = Number(option('token-budget') ?? (TINY ? 2048 : 32768));

async function main() {
	await ensureBundledModel(DEFAULT_MODEL_DIR, 'static');
	const { config: bundled, files } = await openCheckpointFromDirectory(DEFAULT_MODEL_DIR);
	const config = TINY
		? {
				...bundled,
				hiddenSize: 32,
				intermediateSize: 64,
				numLayers: 2,
				numHeads: 2,
				numKvHeads: 2,
				headDim: 16
			}
		: bundled;
	const tokenizer = Tokenizer.fromJson(
		files.tokenizerJson,
		files.tokenizerConfigJson,
		files.chatTemplate
	);
	const rand = lcg(7);
	const games = legalPlayTranscripts(GAMES, 11);
	const base: TrainSequence[] = games.map((g, i) => {
		const s = sftSequence(tokenizer, { messages: g.messages() as never }, i);
		return { ids: s.ids, trainMask: s.trainMask, advantage: rand() * 2 - 1 };
	});
	const gpu = await acquireGpu();
	const model = await TransformerModel.create(gpu, config, new SyntheticWeights(config), {
		lora: { rank: 64, alpha: 128 },
		seed: 1
	});
	const optimizer = new LoraOptimizer(gpu, model.lora!);
	// a rollout's generator: its merged copy of the projections, synced by one generation
	const generator = new Generator(model, { prefixCache: false });
	await generator.generate([[1, 2, 3]], { maxTokens: 1, temperature: 0 });
	const merged = model.mergedWeights;
	if (!merged?.current) throw new Error('the generator made no merged copy of the projections');
	// on-policy rollout logprobs, scored in micro-batches as the update packs them
	const sequences: TrainSequence[] = [];
	for (const mb of packSequences(base, {
		maxSeqLen: config.maxPositionEmbeddings,
		tokenBudget: TOKEN_BUDGET
	}).microBatches) {
		const { logprobs, T } = await model.scoreTokens(mb.tokens);
		mb.sequenceIndex.forEach((index, b) => {
			const s = base[index];
			const rollout = Array.from(s.ids, (_, i) =>
				s.trainMask[i] ? logprobs[b * (T - 1) + i - 1] : null
			);
			sequences.push({ ...s, rolloutLogprobs: rollout });
		});
	}
	const tokens = sequences.reduce((s, q) => s + q.ids.length, 0);
	const shared = packSequences(sequences, {
		maxSeqLen: config.maxPositionEmbeddings,
		tokenBudget: TOKEN_BUDGET,
		sharePrefixes: true
	}).microBatches;
	const prefixes = shared.map((m) => ({
		rows: m.B,
		T: m.T,
		p: m.prefix?.length ?? 0,
		prefixes: m.prefix ? m.prefix.ids.length / m.prefix.length : 0
	}));
	log(`${sequences.length} sequences, ${tokens} tokens; micro-batches ${JSON.stringify(prefixes)}`);
	const step: GrpoStepConfig = {
		loss: 'cispo',
		klBeta: 0.05,
		lr: 0,
		tokenBudget: TOKEN_BUDGET,
		maxSeqLen: config.maxPositionEmbeddings
	};
	const kinds = ['whole', 'shared', 'merged'] as const;
	const runs = { whole: [] as number[][], shared: [] as number[][], merged: [] as number[][] };
	const losses: Record<string, number[]> = { whole: [], shared: [], merged: [] };
	for (let rep = 0; rep <= REPS; rep++)
		for (const kind of kinds) {
			model.useMergedWeights(kind === 'merged' ? merged : undefined);
			const r = await grpoStep(model, optimizer, sequences, {
				...step,
				sharePrefixes: kind !== 'whole'
			});
			if (r.skipped) throw new Error(`the ${kind} step was skipped: ${r.skipped}`);
			const t = r.metrics.times;
			log(`rep ${rep} ${kind}: ${t.totalMs.toFixed(0)} ms (reference ${t.referenceMs.toFixed(0)})`);
			if (rep === 0) continue; // warm-up: pipelines, pooled buffers
			runs[kind].push([t.totalMs, t.referenceMs, t.forwardBackwardMs]);
			losses[kind].push(r.metrics.loss, r.metrics.klMean ?? NaN);
		}
	const profiles: Record<string, unknown> = {};
	if (flag('profile'))
		for (const kind of kinds) {
			model.useMergedWeights(kind === 'merged' ? merged : undefined);
			const profiler = new KernelProfiler(gpu);
			const r = await grpoStep(model, optimizer, sequences, {
				...step,
				sharePrefixes: kind !== 'whole'
			});
			const report = profiler.report();
			profiler.detach();
			profiles[kind] = {
				kernelMs: Number(report.totalMs.toFixed(1)),
				dispatches: report.kernels.reduce((n, k) => n + k.count, 0),
				stepMs: r.skipped ? undefined : Math.round(r.metrics.times.totalMs),
				kernels: report.kernels.slice(0, 14).map((k) => ({
					name: k.name,
					count: k.count,
					ms: Number(k.totalMs.toFixed(1))
				}))
			};
		}
	const summary = (rows: number[][], k: number) => {
		const xs = rows.map((r) => r[k]);
		return { median: median(xs), min: Math.min(...xs), max: Math.max(...xs) };
	};
	const phases = (rows: number[][]) => ({
		stepMs: summary(rows, 0),
		referenceMs: summary(rows, 1),
		forwardBackwardMs: summary(rows, 2)
	});
	printJson({
		...benchHeader('bench-update', gpu),
		config: {
			hiddenSize: config.hiddenSize,
			layers: config.numLayers,
			lora: 'r 64',
			games: GAMES,
			tokenBudget: TOKEN_BUDGET,
			reps: REPS
		},
		sequences: sequences.length,
		tokens,
		microBatches: prefixes,
		whole: phases(runs.whole),
		shared: phases(runs.shared),
		merged: phases(runs.merged),
		ratio: median(runs.whole.map((r) => r[0])) / median(runs.shared.map((r) => r[0])),
		ratioMerged: median(runs.whole.map((r) => r[0])) / median(runs.merged.map((r) => r[0])),
		lossAndKl: losses,
		...(flag('profile') ? { profiles } : {})
	});
	generator.release();
	optimizer.release();
	model.release();
}

runMain(main);
