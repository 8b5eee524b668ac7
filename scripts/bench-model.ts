/**
 * @file Model benchmark, TabRL's side: one LoRA forward+backward (TransformerModel.
 * forwardBackward, r = 8, alpha = 16 on q/k/v/o/gate/up/down) over a batch of 8 x 512
 * tokens for SmolLM2-135M's shape and for Qwen2.5-0.5B's shape, random weights made in
 * memory (no files). Prints ONE JSON object on stdout, progress on stderr.
 * scripts/bench_model_torch.py does the same work with transformers + peft (fp32 eager,
 * TF32 off); run both in one device call and compare ratios.
 *
 *   npx tsx scripts/bench-model.ts [--shape smollm2-135m|qwen2.5-0.5b] [--reps N]
 *       [--warmup N] [--batch BxT] [--tiny] [--profile]
 *   (GPU machine) bash .gpu/run node .gpu/bench-model.mjs > $OUT/tabrl-model.json
 *
 * Timing: wall time of `await forwardBackward(...)` (it waits for the GPU, and reads the
 * logprobs back once between forward and backward, as training does), after WARMUP calls;
 * the median of REPS. Forward-only scoring (scoreTokens) is timed the same way.
 * Memory: WebGPU reports no usage, so every buffer the device creates is tracked (size
 * counted from createBuffer to destroy): `peakLiveBytes` is the most alive at once, over
 * the weights, the LoRA state and the calls (comparable to torch.cuda.max_memory_allocated);
 * memory.ts's estimate for a training call is reported beside it.
 * --tiny: tiny shapes and batch, to check the script itself on a CPU driver.
 */
import { acquireGpu, type Gpu } from '../src/lib/gpu/device';
import { KernelProfiler } from '../src/lib/gpu/profiler';
import { TransformerModel } from '../src/lib/model/transformer';
import type { ModelConfig, StoredTensorInfo, WeightSource } from '../src/lib/model/types';
import { weightSpecs } from '../src/lib/model/weight-spec';

const args = process.argv.slice(2);
const flag = (name: string) => args.includes(`--${name}`);
const option = (name: string) => {
	const i = args.indexOf(`--${name}`);
	return i >= 0 ? args[i + 1] : undefined;
};
const log = (...x: unknown[]) => console.error('[bench-model]', ...x);
const TINY = flag('tiny');
const WARMUP = Number(option('warmup') ?? (TINY ? 1 : 2));
const REPS = Number(option('reps') ?? (TINY ? 2 : 5));
/** --profile: also GPU time per kernel for one call of each kind (needs timestamp-query). */
const PROFILE = flag('profile');

const COMMON = {
	maxPositionEmbeddings: 32768,
	outputBias: false,
	qkNorm: false,
	dtype: 'float32',
	eosTokenIds: []
} as const;

/** The published configs' shapes (config.json of each model on the hub). */
const SHAPES: Record<string, ModelConfig> = {
	'smollm2-135m': {
		...COMMON,
		architecture: 'LlamaForCausalLM',
		vocabSize: 49152,
		hiddenSize: 576,
		intermediateSize: 1536,
		numLayers: 30,
		numHeads: 9,
		numKvHeads: 3,
		headDim: 64,
		rmsNormEps: 1e-5,
		rope: { theta: 100000, type: 'default' },
		tieWordEmbeddings: true,
		attentionBias: false
	},
	'qwen2.5-0.5b': {
		...COMMON,
		architecture: 'Qwen2ForCausalLM',
		vocabSize: 151936,
		hiddenSize: 896,
		intermediateSize: 4864,
		numLayers: 24,
		numHeads: 14,
		numKvHeads: 2,
		headDim: 64,
		rmsNormEps: 1e-6,
		rope: { theta: 1000000, type: 'default' },
		tieWordEmbeddings: true,
		attentionBias: true
	}
};
const TINY_SHAPES: Record<string, ModelConfig> = {
	'tiny-llama': {
		...SHAPES['smollm2-135m'],
		vocabSize: 512,
		hiddenSize: 64,
		intermediateSize: 128,
		numLayers: 2,
		numHeads: 4,
		numKvHeads: 2,
		headDim: 16
	},
	'tiny-qwen2': {
		...SHAPES['qwen2.5-0.5b'],
		vocabSize: 640,
		hiddenSize: 64,
		intermediateSize: 96,
		numLayers: 2,
		numHeads: 4,
		numKvHeads: 1,
		headDim: 16
	}
};
/** --batch BxT overrides (e.g. 1x8 to check a real shape on a CPU driver). */
function batchShape(): { B: number; T: number } {
	const spec = option('batch');
	if (!spec) return TINY ? { B: 2, T: 32 } : { B: 8, T: 512 };
	const m = /^(\d+)x(\d+)$/.exec(spec);
	if (!m || +m[1] < 1 || +m[2] < 2) throw new Error(`--batch wants BxT (e.g. 8x512), got ${spec}`);
	return { B: +m[1], T: +m[2] };
}
const BATCH = batchShape();

/**
 * Random weights generated on request (xorshift32, fast enough for 0.5 B values): the
 * roles' scales of random-weights.ts (projections U(+-1/sqrt(in)), norms ~1, biases and
 * embedding small), so activations stay finite; values do not affect the timing.
 */
class SyntheticWeights implements WeightSource {
	readonly #specs: StoredTensorInfo[];
	constructor(readonly config: ModelConfig) {
		this.#specs = weightSpecs(config).map((s) => ({ ...s, dtype: 'float32' as const }));
	}
	list(): StoredTensorInfo[] {
		return this.#specs;
	}
	async readF32(name: string): Promise<Float32Array> {
		const spec = this.#specs.find((s) => s.name === name);
		if (!spec) throw new Error(`no tensor ${name}`);
		const n = spec.shape.reduce((a, b) => a * b, 1);
		let lo = -1 / Math.sqrt(spec.shape[1] ?? 1);
		let hi = -lo;
		if (name.endsWith('norm.weight')) [lo, hi] = [0.9, 1.1];
		else if (name.endsWith('.bias')) [lo, hi] = [-0.1, 0.1];
		else if (name.includes('embed_tokens') || name === 'lm_head.weight')
			[lo, hi] = [-2 / Math.sqrt(this.config.hiddenSize), 2 / Math.sqrt(this.config.hiddenSize)];
		const out = new Float32Array(n);
		let x = 0x811c9dc5; // FNV-1a of the name: every tensor its own values
		for (let i = 0; i < name.length; i++) x = Math.imul(x ^ name.charCodeAt(i), 0x01000193);
		x = x >>> 0 || 1;
		const span = (hi - lo) / 4294967296;
		for (let i = 0; i < n; i++) {
			x ^= x << 13;
			x ^= x >>> 17;
			x ^= x << 5;
			out[i] = lo + span * (x >>> 0);
		}
		return out;
	}
}

/** Counts the bytes of every buffer the device creates until it is destroyed. */
function trackMemory(gpu: Gpu) {
	const device = gpu.device as GPUDevice & { createBuffer: GPUDevice['createBuffer'] };
	const original = device.createBuffer.bind(device);
	const state = { live: 0, peak: 0, buffers: 0 };
	device.createBuffer = (descriptor: GPUBufferDescriptor): GPUBuffer => {
		const buffer = original(descriptor);
		const size = Number(descriptor.size);
		state.live += size;
		state.buffers++;
		state.peak = Math.max(state.peak, state.live);
		const destroy = buffer.destroy.bind(buffer);
		let destroyed = false;
		buffer.destroy = () => {
			if (!destroyed) {
				destroyed = true;
				state.live -= size;
				state.buffers--;
			}
			destroy();
		};
		return buffer;
	};
	return {
		state,
		resetPeak: () => (state.peak = state.live),
		restore: () => (device.createBuffer = original)
	};
}

function median(xs: number[]): number {
	const s = [...xs].sort((a, b) => a - b);
	const m = s.length >> 1;
	return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

async function timeIt(reps: number, warmup: number, fn: () => Promise<unknown>) {
	for (let i = 0; i < warmup; i++) await fn();
	const times: number[] = [];
	for (let i = 0; i < reps; i++) {
		const t0 = performance.now();
		await fn();
		times.push(performance.now() - t0);
	}
	return {
		medianMs: +median(times).toFixed(2),
		minMs: +Math.min(...times).toFixed(2),
		timesMs: times.map((t) => +t.toFixed(2))
	};
}

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
	const mem = trackMemory(gpu);
	let model: TransformerModel | undefined;
	try {
		const t0 = performance.now();
		model = await TransformerModel.create(gpu, config, new SyntheticWeights(config), {
			lora: { rank: 8, alpha: 16 },
			seed: 1
		});
		await gpu.device.queue.onSubmittedWorkDone();
		const loadSeconds = (performance.now() - t0) / 1000;
		const afterLoad = mem.state.live;
		log(
			`  loaded in ${loadSeconds.toFixed(1)} s; ${(afterLoad / 2 ** 30).toFixed(2)} GiB of buffers`
		);

		// Random ids, full-length rows; LoRA B random so dA is not trivially zero.
		let x = 12345;
		const rand = () => (x = (Math.imul(x, 1103515245) + 12345) >>> 0) / 4294967296;
		const ids = Uint32Array.from({ length: B * T }, () => Math.floor(rand() * config.vocabSize));
		const batch = { ids, lengths: new Uint32Array(B).fill(T), seqLen: T };
		const w = Float32Array.from({ length: B * (T - 1) }, () => rand() - 0.5);
		const params = await model.lora!.read();
		for (const [k, v] of params)
			if (k.includes('lora_B'))
				params.set(
					k,
					v.map(() => 0.02 * (rand() - 0.5))
				);
		model.lora!.write(params);

		const m = model;
		// 'keep' is what PyTorch's eager mode does (every activation kept); 'recompute' what
		// it does with gradient checkpointing (each layer's forward redone in the backward).
		const policies = {} as Record<'keep' | 'recompute', unknown>;
		for (const activations of ['keep', 'recompute'] as const) {
			mem.resetPeak();
			const train = await timeIt(REPS, WARMUP, () => m.forwardBackward(batch, w, { activations }));
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
		const score = await timeIt(REPS, WARMUP, () => m.scoreTokens(batch));
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
	} catch (error) {
		log(`  ${name} failed: ${String(error)}`);
		return { name, error: String((error as Error)?.stack ?? error) };
	} finally {
		model?.release();
		mem.restore();
	}
}

async function main() {
	const gpu = await acquireGpu();
	const shapes = TINY ? TINY_SHAPES : SHAPES;
	const only = option('shape');
	if (only && !shapes[only])
		throw new Error(`unknown --shape ${only}; known: ${Object.keys(shapes)}`);
	const results = [];
	for (const [name, config] of Object.entries(shapes))
		if (!only || only === name) results.push(await benchShape(gpu, name, config));
	const out = {
		bench: 'model LoRA forward+backward (TabRL)',
		date: new Date().toISOString(),
		node: process.version,
		device: gpu.adapter,
		features: gpu.features,
		timing: `wall time of await forwardBackward / scoreTokens, median of ${REPS} after ${WARMUP} warmup`,
		memory:
			'peakLiveBytes: most bytes of GPU buffers alive at once during the timed calls (weights, LoRA state, activations, pool, staging)',
		results
	};
	gpu.destroy();
	process.stdout.write(JSON.stringify(out, null, 1) + '\n');
}

main().then(
	() => process.exit(0),
	(error) => {
		process.stdout.write(JSON.stringify({ error: String(error?.stack ?? error) }) + '\n');
		process.exit(1);
	}
);
