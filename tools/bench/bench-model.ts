/**
 * @file Model benchmark, TabRL's side: one LoRA forward+backward (r 8, alpha 16, all seven
 * projections) over 8 x 512 tokens for SmolLM2-135M's and Qwen2.5-0.5B's shapes, random
 * weights; bench_model_torch.py does the same in PyTorch. Median wall time of REPS after
 * WARMUP (scoring too), and peakLiveBytes of every buffer created (beside memory.ts's
 * estimate). One JSON object; --tiny checks the script on a CPU driver.
 *
 *   npx tsx tools/bench/bench-model.ts [--shape smollm2-135m|qwen2.5-0.5b] [--reps N]
 *       [--warmup N] [--batch BxT] [--tiny] [--profile]
 */
import { acquireGpu, type Gpu } from '../../src/lib/gpu/device';
import { KernelProfiler } from '../../src/lib/gpu/profiler';
import { TransformerModel } from '../../src/lib/model/transformer/transformer';
import type { ModelConfig } from '../../src/lib/model/types';
import { makeLog, printJson, runMain } from '../tool-entry';
import {
	benchHeader,
	flag,
	lcg,
	option,
	randomizeLoraB,
	selectedShapes,
	timeCalls,
	TINY,
	withSyntheticModel
} from './bench-support';

const log = makeLog('bench-model');
const WARMUP = Number(option('warmup') ?? (TINY ? 1 : 2));
const REPS = Number(option('reps') ?? (TINY ? 2 : 5));
/** --profile: also GPU time per kernel for one call of each kind (needs timestamp-query). */
const PROFILE = flag('profile');

/** --batch BxT overrides (e.g. 1x8 to check a real shape on a CPU driver). */
function batchShape(): { B: number; T: number } {
	const spec = option('batch');
	if (!spec) return TINY ? { B: 2, T: 32 } : { B: 8, T: 512 };
	const m = /^(\d+)x(\d+)$/.exec(spec);
	if (!m || +m[1] < 1 || +m[2] < 2) throw new Error(`--batch wants BxT (e.g. 8x512), got ${spec}`);
	return { B: +m[1], T: +m[2] };
}
const BATCH = batchShape();

type Round = ReturnType<typeof roundReport>;
function roundReport(r: ReturnType<KernelProfiler['report']>) {
	return {
		totalMs: +r.totalMs.toFixed(2),
		untimed: r.untimed,
		kernels: r.kernels.map((k) => ({ ...k, totalMs: +k.totalMs.toFixed(3) }))
	};
}

/** GPU time per kernel name of one call (profiler.ts). */
async function profileOne(gpu: Gpu, what: string, call: () => Promise<unknown>): Promise<Round> {
	const profiler = new KernelProfiler(gpu);
	try {
		await call();
		const r = roundReport(profiler.report());
		log(`  profile (GPU ms per kernel, ${what}): total ${r.totalMs} ms`);
		for (const k of r.kernels.slice(0, 12)) log(`    ${k.name}: ${k.totalMs} ms in ${k.count}`);
		return r;
	} finally {
		profiler.detach();
	}
}

type Batch = Parameters<TransformerModel['forwardBackward']>[0];
const profileCalls = (
	gpu: Gpu,
	m: TransformerModel,
	batch: Batch,
	w: Float32Array,
	activations: 'keep' | 'recompute'
) =>
	profileOne(gpu, `forward+backward, ${activations}`, () =>
		m.forwardBackward(batch, w, { activations })
	);
const profileScore = (gpu: Gpu, m: TransformerModel, batch: Batch) =>
	profileOne(gpu, 'forward', () => m.scoreTokens(batch));

async function benchShape(gpu: Gpu, name: string, config: ModelConfig) {
	const { B, T } = BATCH;
	log(
		`${name}: ${config.numLayers} layers, hidden ${config.hiddenSize}, vocab ${config.vocabSize}`
	);
	const lora = { rank: 8, alpha: 16 };
	return withSyntheticModel(gpu, name, config, lora, log, async (model, loadSeconds, mem) => {
		const afterLoad = mem.state.live;
		log(
			`  loaded in ${loadSeconds.toFixed(1)} s; ${(afterLoad / 2 ** 30).toFixed(2)} GiB of buffers`
		);

		// Random ids, full-length rows; LoRA B random so dA is not trivially zero.
		const rand = lcg(12345);
		const ids = Uint32Array.from({ length: B * T }, () => Math.floor(rand() * config.vocabSize));
		const batch = { ids, lengths: new Uint32Array(B).fill(T), seqLen: T };
		const w = Float32Array.from({ length: B * (T - 1) }, () => rand() - 0.5);
		await randomizeLoraB(model, rand);

		const m = model;
		// 'keep' is what PyTorch's eager mode does (every activation kept); 'recompute' what
		// it does with gradient checkpointing (each layer's forward redone in the backward).
		const policies = {} as Record<'keep' | 'recompute', unknown>;
		for (const activations of ['keep', 'recompute'] as const) {
			mem.resetPeak();
			const train = await timeCalls(REPS, WARMUP, () =>
				m.forwardBackward(batch, w, { activations })
			);
			const peak = mem.state.peak;
			log(
				`  forward+backward (${activations}): median ${train.medianMs} ms (${train.timesMs.join(', ')})`
			);
			const estimate = m.estimateMemory(B, T, 'train', activations === 'keep');
			const profile = PROFILE ? await profileCalls(gpu, m, batch, w, activations) : undefined;
			policies[activations] = {
				...train,
				tokensPerSecond: Math.round((B * T) / (train.medianMs / 1000)),
				peakLiveBytes: peak,
				estimateBytes: estimate.totalBytes,
				estimateLines: estimate.lines.map((l) => ({ what: l.what, bytes: l.bytes })),
				...(profile ? { profile } : {})
			};
			// The pool keeps this policy's buffers; the next one starts from a clean slate (once
			// the GPU is done, released buffers are back in the pool, where trim finds them).
			await gpu.device.queue.onSubmittedWorkDone();
			m.trimPool();
		}
		const score = await timeCalls(REPS, WARMUP, () => m.scoreTokens(batch));
		log(`  forward (score): median ${score.medianMs} ms`);
		const scoreProfile = PROFILE ? await profileScore(gpu, m, batch) : undefined;
		const errors = gpu.validationErrors.splice(0);
		return {
			name,
			config,
			batch: { B, T, tokens: B * T },
			lora: { rank: 8, alpha: 16, targets: m.lora!.config.targetModules },
			loadSeconds: +loadSeconds.toFixed(2),
			forwardBackward: policies,
			forward: { ...score, ...(scoreProfile ? { profile: scoreProfile } : {}) },
			memory: { afterLoadBytes: afterLoad },
			validationErrors: errors.slice(0, 5)
		};
	});
}

async function main() {
	const gpu = await acquireGpu();
	const results = [];
	for (const [name, config] of selectedShapes()) results.push(await benchShape(gpu, name, config));
	const out = {
		...benchHeader('model LoRA forward+backward (TabRL)', gpu),
		timing: `wall time of await forwardBackward / scoreTokens, median of ${REPS} after ${WARMUP} warmup`,
		memory:
			'peakLiveBytes: most bytes of GPU buffers alive at once during the timed calls (weights, LoRA state, activations, pool, staging)',
		results
	};
	gpu.destroy();
	printJson(out);
}

runMain(main);
