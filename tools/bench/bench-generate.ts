/**
 * @file Generation benchmark, TabRL's side: Generator.generate at batch 1, 8 and 32 for
 * SmolLM2-135M's and Qwen2.5-0.5B's shapes, random weights, 128-token prompts, 256 new
 * tokens at T 1; bench_generate_torch.py does the same in PyTorch. Per call (median): total,
 * first-token and decode ms, tokens/s, peak GPU buffers. --lora adds LoRA r 8;
 * --decode-matmul times decode-layer.ts variants. One JSON object.
 *
 *   npx tsx tools/bench/bench-generate.ts [--shape smollm2-135m|qwen2.5-0.5b] [--batches 1,8,32]
 *       [--prompt 128] [--new 256] [--reps N] [--warmup N] [--lora] [--tiny] [--decode-matmul ...]
 */
import { acquireGpu, type Gpu } from '../../src/lib/gpu/device';
import { parseDecodeMatmul } from '../../src/lib/model/transformer/decode-layer';
import { Generator } from '../../src/lib/model/generate/generator';
import { TransformerModel } from '../../src/lib/model/transformer/transformer';
import type { ModelConfig } from '../../src/lib/model/types';
import { errorText, makeLog, printJson, runMain } from '../tool-entry';
import {
	benchHeader,
	flag,
	lcg,
	median,
	option,
	randomizeLoraB,
	selectedShapes,
	TINY,
	withSyntheticModel
} from './bench-support';

const log = makeLog('bench-generate');
const WARMUP = Number(option('warmup') ?? 1);
const REPS = Number(option('reps') ?? (TINY ? 2 : 3));
const BATCHES = (option('batches') ?? (TINY ? '1,2' : '1,8,32')).split(',').map(Number);
const PROMPT = Number(option('prompt') ?? (TINY ? 8 : 128));
const NEW = Number(option('new') ?? (TINY ? 8 : 256));
const LORA = flag('lora');
const DECODE_MATMUL = (option('decode-matmul') ?? process.env.TABRL_DECODE_MATMUL ?? '')
	.split('/')
	.filter(Boolean);
for (const spec of DECODE_MATMUL) parseDecodeMatmul(spec); // bad specs fail before any work

const round = (x: number, d = 2) => +x.toFixed(d);

/** One timed generate call: total, to the first token, and the decode steps after it. */
async function timedCall(gen: Generator, prompts: number[][], seed: number) {
	const t0 = performance.now();
	let first = 0;
	let last = 0;
	let steps = 0;
	const out = await gen.generate(prompts, {
		maxTokens: NEW,
		temperature: 1,
		ignoreEos: true,
		seed,
		onStep: () => {
			last = performance.now();
			if (steps++ === 0) first = last;
		}
	});
	const total = performance.now() - t0;
	if (out.some((r) => r.ids.length !== NEW)) throw new Error('a sequence stopped early');
	return { totalMs: total, firstTokenMs: first - t0, decodeMs: last - first, steps };
}

async function benchBatch(gpu: Gpu, model: TransformerModel, B: number, matmul?: string) {
	const decodeMatmul = matmul ? parseDecodeMatmul(matmul) : undefined;
	const gen = new Generator(model, { maxBatch: B, decodeMatmul });
	try {
		const rand = lcg(12345 + B);
		const prompts = Array.from({ length: B }, () =>
			Array.from({ length: PROMPT }, () => Math.floor(rand() * model.config.vocabSize))
		);
		for (let i = 0; i < WARMUP; i++) await timedCall(gen, prompts, i);
		const calls = [];
		for (let i = 0; i < REPS; i++) calls.push(await timedCall(gen, prompts, 100 + i));
		const total = median(calls.map((c) => c.totalMs));
		const decode = median(calls.map((c) => c.decodeMs));
		const result = {
			B,
			decodeMatmul: matmul ?? 'default',
			promptTokens: PROMPT,
			newTokens: NEW,
			totalMs: round(total),
			firstTokenMs: round(median(calls.map((c) => c.firstTokenMs))),
			decodeMs: round(decode),
			msPerDecodeStep: round(decode / (NEW - 1), 3),
			tokensPerSecond: Math.round((B * NEW) / (total / 1000)),
			decodeTokensPerSecond: Math.round((B * (NEW - 1)) / (decode / 1000)),
			totalMsAll: calls.map((c) => round(c.totalMs)),
			session: gen.session
		};
		log(
			`  B=${B}${matmul ? ` [${matmul}]` : ''}: ${result.decodeTokensPerSecond} tok/s decode (${result.msPerDecodeStep} ms/step), ` +
				`${result.tokensPerSecond} tok/s overall, first token ${result.firstTokenMs} ms`
		);
		return result;
	} finally {
		gen.release();
	}
}

const LORA_SHAPE = { rank: 8, alpha: 16 };

async function benchShape(gpu: Gpu, name: string, config: ModelConfig, lora: boolean) {
	log(
		`${name}${lora ? ' + LoRA r=8' : ''}: ${config.numLayers} layers, hidden ${config.hiddenSize}`
	);
	const adapter = lora ? LORA_SHAPE : undefined;
	return withSyntheticModel(gpu, name, config, adapter, log, async (model, loadSeconds, mem) => {
		if (lora) await randomizeLoraB(model, lcg(7));
		const afterLoad = mem.state.live;
		const batches = [];
		for (const B of BATCHES)
			for (const matmul of DECODE_MATMUL.length ? DECODE_MATMUL : [undefined]) {
				mem.resetPeak();
				try {
					const r = await benchBatch(gpu, model, B, matmul);
					batches.push({ ...r, peakLiveBytes: mem.state.peak });
				} catch (error) {
					log(`  B=${B}${matmul ? ` [${matmul}]` : ''} failed: ${String(error)}`);
					batches.push({
						B,
						decodeMatmul: matmul,
						error: errorText(error)
					});
				}
			}
		return {
			name,
			lora: adapter ?? null,
			config,
			loadSeconds: round(loadSeconds),
			afterLoadBytes: afterLoad,
			batches,
			validationErrors: gpu.validationErrors.splice(0).slice(0, 5)
		};
	});
}

async function main() {
	const gpu = await acquireGpu();
	const results = [];
	for (const [name, config] of selectedShapes()) {
		results.push(await benchShape(gpu, name, config, false));
		if (LORA) results.push(await benchShape(gpu, name, config, true));
	}
	const out = {
		...benchHeader('generation: decode throughput with a KV cache (TabRL Generator)', gpu),
		maxStorageBuffersPerShaderStage: gpu.limits.maxStorageBuffersPerShaderStage,
		work: `B prompts of ${PROMPT} random tokens, ${NEW} new tokens each (ignoreEos), temperature 1, top-k/top-p off, f32`,
		timing: `wall time of await generate; decode = first to last onStep; median of ${REPS} after ${WARMUP} warmup`,
		results
	};
	gpu.destroy();
	printJson(out);
}

runMain(main);
