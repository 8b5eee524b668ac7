/**
 * @file What the benchmark scripts share: their command-line flags, the model shapes they
 * time (the published configs of SmolLM2-135M and Qwen2.5-0.5B, and tiny stand-ins that
 * check a script on a CPU driver) and the --tiny / --shape choice among them, random
 * weights made on request and a model built on them, a seeded LCG and random LoRA B, GPU
 * memory tracking, the median, timed calls and a report's header. Bundled into each script by pack.sh (esbuild), so it
 * is plain TS.
 */
import type { Gpu } from '../../src/lib/gpu/device';
import type { ModelConfig, StoredTensorInfo, WeightSource } from '../../src/lib/model/types';
import { TransformerModel } from '../../src/lib/model/transformer/transformer';
import { weightSpecs } from '../../src/lib/model/hf/weight-spec';
import { errorText } from '../tool-entry';
import { hubModel, hubModelConfig } from '../../src/lib/model/hf/hub-models';

const args = process.argv.slice(2);
export const flag = (name: string): boolean => args.includes(`--${name}`);
export const option = (name: string): string | undefined => {
	const i = args.indexOf(`--${name}`);
	return i >= 0 ? args[i + 1] : undefined;
};
/** --tiny: tiny shapes and sizes, to check a script on a CPU driver. */
export const TINY = flag('tiny');

const COMMON = {
	maxPositionEmbeddings: 32768,
	outputBias: false,
	qkNorm: false,
	dtype: 'float32'
} as const;
const NO_EOS: number[] = [];

/** The published configs' shapes (hub-models.ts), in f32, with no stop token. */
const published = (key: string): ModelConfig => ({
	...hubModelConfig(hubModel(key)!),
	...COMMON,
	eosTokenIds: NO_EOS
});
export const SHAPES: Record<string, ModelConfig> = {
	'smollm2-135m': published('smollm2-135m'),
	'qwen2.5-0.5b': published('qwen2.5-0.5b')
};
export const TINY_SHAPES: Record<string, ModelConfig> = {
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
/**
 * Random weights generated on request (xorshift32, fast enough for 0.5 B values): the
 * roles' scales of random-weights.ts (projections U(+-1/sqrt(in)), norms ~1, biases and
 * embedding small), so activations stay finite; values do not affect the timing.
 */
export class SyntheticWeights implements WeightSource {
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
export function trackMemory(gpu: Gpu) {
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

export function median(xs: number[]): number {
	const s = [...xs].sort((a, b) => a - b);
	const m = s.length >> 1;
	return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/**
 * fn on a model of `config` with SyntheticWeights (seed 1; LoRA when `lora` is given), its
 * load timed to the GPU's idle and every buffer counted from before it (`mem`). A throw is
 * logged and returned as {name, error}; the model is released and the counting ends after.
 */
export async function withSyntheticModel<R>(
	gpu: Gpu,
	name: string,
	config: ModelConfig,
	lora: { rank: number; alpha: number } | undefined,
	log: (...x: unknown[]) => void,
	fn: (
		model: TransformerModel,
		loadSeconds: number,
		mem: ReturnType<typeof trackMemory>
	) => Promise<R>
): Promise<R | { name: string; error: string }> {
	const mem = trackMemory(gpu);
	let model: TransformerModel | undefined;
	try {
		const t0 = performance.now();
		model = await TransformerModel.create(gpu, config, new SyntheticWeights(config), {
			...(lora ? { lora } : {}),
			seed: 1
		});
		await gpu.device.queue.onSubmittedWorkDone();
		return await fn(model, (performance.now() - t0) / 1000, mem);
	} catch (error) {
		log(`  ${name} failed: ${String(error)}`);
		return { name, error: errorText(error) };
	} finally {
		model?.release();
		mem.restore();
	}
}

/** A seeded LCG in [0, 1) (seed 0 counts as 1). */
export function lcg(seed: number): () => number {
	let x = seed >>> 0 || 1;
	return () => (x = (Math.imul(x, 1103515245) + 12345) >>> 0) / 4294967296;
}

/** The shapes a model benchmark runs: TINY_SHAPES with --tiny, else SHAPES; --shape keeps one. */
export function selectedShapes(): [string, ModelConfig][] {
	const shapes = TINY ? TINY_SHAPES : SHAPES;
	const only = option('shape');
	if (only && !shapes[only])
		throw new Error(`unknown --shape ${only}; known: ${Object.keys(shapes)}`);
	return Object.entries(shapes).filter(([name]) => !only || only === name);
}

/** Every lora_B of the model set U(-0.01, 0.01) from `rand`, so the adapters are no no-op. */
export async function randomizeLoraB(model: TransformerModel, rand: () => number) {
	const params = await model.lora!.read();
	for (const [k, v] of params)
		if (k.includes('lora_B'))
			params.set(
				k,
				v.map(() => 0.02 * (rand() - 0.5))
			);
	model.lora!.write(params);
}

/** Wall ms of `reps` awaited calls after `warmup` calls: median, min and each, to `digits`. */
export async function timeCalls(
	reps: number,
	warmup: number,
	fn: () => Promise<unknown>,
	digits = 2
) {
	for (let i = 0; i < warmup; i++) await fn();
	const times: number[] = [];
	for (let i = 0; i < reps; i++) {
		const t0 = performance.now();
		await fn();
		times.push(performance.now() - t0);
	}
	return {
		medianMs: +median(times).toFixed(digits),
		minMs: +Math.min(...times).toFixed(digits),
		timesMs: times.map((t) => +t.toFixed(digits))
	};
}

/** A benchmark report's first fields: what it times, when, on which node and device. */
export const benchHeader = (bench: string, gpu: Gpu) => ({
	bench,
	date: new Date().toISOString(),
	node: process.version,
	device: gpu.adapter,
	features: gpu.features
});
