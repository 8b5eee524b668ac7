/**
 * @file The engine's share of a tic-tac-toe GRPO step's rollouts: the bundled model's shape
 * decoding what a step's games ask, turn by turn (TURNS generate calls over the live games;
 * a game's first prompt is one of two system prompts of SYSTEM tokens, as a game's mark
 * picks, then its own; its next prompt is its sequence so far and PER_TURN new tokens; up
 * to 16 new tokens at T 1), for `before` (batches of 64, prefill groups of 4096, no prefix store),
 * `noPrefix` (no prefix store, a session per batch size), `exact` (the prefix store, a
 * session per batch size) and `auto` (today's defaults: sessionSlack, one decode session
 * kept across the turns, the adapter merged into the projections), `live` (auto with the
 * adapter applied on top), `fused128` and `fused512` (auto with the fused skinny decode kernels
 * up to 128 or 512 rows), `noShare` (auto with each first prompt prefilled whole, not
 * its system prompt once), `rows` (auto with the prefill's rows over cached tokens attending
 * one by one, decode attention's indexed form): median, min and max ms and the Generator's
 * stats (callMs: the calls end to end). The adapter counts as changed before each rollout (a GRPO step's
 * update), so no rollout reuses another's keys. One JSON object; --tiles h200 forces the
 * H200's thresholds; --profile adds per-kernel GPU time.
 *
 *   npx tsx tools/bench/bench-rollout.ts [--games 512] [--turns 5] [--reps 3] [--tiny] [--tiles h200] [--profile]
 *     [--configs auto,rows]  (only those configurations, in that order)
 */
import { acquireGpu } from '../../src/lib/gpu/device';
import { KernelProfiler } from '../../src/lib/gpu/profiler';
import { H200_TUNING } from '../../src/lib/gpu/tuning';
import { Generator } from '../../src/lib/model/generate/generator';
import type { GeneratorOptions } from '../../src/lib/model/generate/options';
import { TransformerModel } from '../../src/lib/model/transformer/transformer';
import type { ModelConfig } from '../../src/lib/model/types';
import { flag, lcg, option, SHAPES, SyntheticWeights } from './bench-support';

const log = (...x: unknown[]) => console.error('[bench-rollout]', ...x);
const TINY = flag('tiny');
const GAMES = Number(option('games') ?? (TINY ? 32 : 512));
const TURNS = Number(option('turns') ?? (TINY ? 3 : 5));
const REPS = Number(option('reps') ?? (TINY ? 1 : 3));
const FIRST = 120;
const SYSTEM = 100;
const PER_TURN = 40;
const NEW = 16;

/** scripts/tictactoe-model.ts MODEL_SIZES.small (tiny: .tiny), Llama-shaped. */
const CONFIG: ModelConfig = {
	...SHAPES['smollm2-135m'],
	vocabSize: 700,
	hiddenSize: TINY ? 32 : 256,
	intermediateSize: TINY ? 64 : 768,
	numLayers: TINY ? 2 : 6,
	numHeads: TINY ? 2 : 4,
	numKvHeads: TINY ? 2 : 4,
	headDim: TINY ? 16 : 64,
	maxPositionEmbeddings: 1024
};

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main() {
	const tiles = option('tiles');
	if (tiles !== undefined && tiles !== 'h200')
		throw new Error(`--tiles h200 or nothing, not ${tiles}`);
	const { largeTileOutputs, tallTileOutputs, mediumTileOutputs } = H200_TUNING;
	const gpu = await acquireGpu(
		tiles ? { tuning: { largeTileOutputs, tallTileOutputs, mediumTileOutputs } } : {}
	);
	const model = await TransformerModel.create(gpu, CONFIG, new SyntheticWeights(CONFIG), {
		lora: { rank: 64, alpha: 128 },
		seed: 1
	});
	const configs: Record<string, GeneratorOptions> = {
		before: {
			maxBatch: 64,
			prefillTokens: 4096,
			maxContext: 512,
			prefixCache: false,
			sessionSlack: false
		},
		noPrefix: { maxContext: 512, prefixCache: false, sessionSlack: false },
		exact: { maxContext: 512, sessionSlack: false },
		auto: { maxContext: 512 },
		// the adapter applied on top of the projections, as before merging
		live: { maxContext: 512, mergeLora: false },
		// the fused skinny decode kernels past their default 32 rows (the tiled path above it)
		fused128: { maxContext: 512, decodeMatmul: { mode: 'fused', maxSkinnyRows: 128 } },
		fused512: { maxContext: 512, decodeMatmul: { mode: 'fused', maxSkinnyRows: 512 } },
		noShare: { maxContext: 512, sharePrefixes: false },
		rows: { maxContext: 512, extendAttention: 'rows' }
	};
	/** One step's rollouts: turn t plays the games still live (a game ends at a random turn). */
	async function rollout(generator: Generator, seed: number) {
		const rand = lcg(seed);
		const ends = Array.from({ length: GAMES }, () => 2 + Math.floor(rand() * (TURNS - 1)));
		const message = (g: number, n: number) =>
			Array.from({ length: n }, (_, i) => (i * 31 + g * 7 + seed) % 700);
		const system = [message(GAMES, SYSTEM), message(GAMES + 1, SYSTEM)];
		const sequences = Array.from({ length: GAMES }, (_, g) => [
			...system[g % 2],
			...message(g, FIRST - SYSTEM + (g % 7))
		]);
		model.lora!.changed(); // a GRPO update came before this step's games
		const t0 = performance.now();
		for (let turn = 0; turn < TURNS; turn++) {
			const live = ends.flatMap((end, g) => (turn < end ? [g] : []));
			if (!live.length) break;
			const prompts = live.map((g) => sequences[g]);
			const out = await generator.generate(prompts, {
				maxTokens: NEW,
				temperature: 1,
				seed: seed + turn
			});
			live.forEach((g, i) => {
				sequences[g] = [...prompts[i], ...out[i].ids, ...message(g + turn, PER_TURN)];
			});
		}
		return performance.now() - t0;
	}
	const result: Record<string, unknown> = {
		bench: 'rollout',
		device: gpu.adapter,
		tiles: tiles ?? 'device',
		games: GAMES,
		turns: TURNS,
		newTokens: NEW,
		model: {
			hidden: CONFIG.hiddenSize,
			layers: CONFIG.numLayers,
			intermediate: CONFIG.intermediateSize
		},
		reps: REPS
	};
	const times: Record<string, number[]> = {};
	// --configs auto,rows: only those, in that order
	const chosen = option('configs')?.split(',') ?? Object.keys(configs);
	for (const name of chosen) if (!(name in configs)) throw new Error(`no configuration ${name}`);
	for (const [name, options] of chosen.map((n) => [n, configs[n]] as const)) {
		const generator = new Generator(model, options);
		log(`${name}: warm-up`);
		await rollout(generator, 1);
		const before = { ...generator.stats };
		times[name] = [];
		for (let r = 0; r < REPS; r++) {
			times[name].push(await rollout(generator, 100 + r));
			log(`${name}: rep ${r} ${times[name].at(-1)!.toFixed(0)} ms`);
		}
		const s = generator.stats;
		const per = (k: keyof typeof s) => (s[k] - before[k]) / REPS;
		result[name] = {
			options,
			rolloutMs: {
				median: median(times[name]),
				min: Math.min(...times[name]),
				max: Math.max(...times[name])
			},
			perRollout: {
				calls: per('calls'),
				sessions: per('sessions'),
				prefillMs: per('prefillMs'),
				decodeMs: per('decodeMs'),
				decodeSteps: per('decodeSteps'),
				promptTokens: per('promptTokens'),
				reusedTokens: per('reusedTokens'),
				sharedTokens: per('sharedTokens'),
				callMs: per('callMs')
			}
		};
		if (name === 'auto' && flag('profile')) {
			const profiler = new KernelProfiler(gpu);
			await rollout(generator, 7);
			const report = profiler.report();
			profiler.detach();
			result.kernels = report.kernels.slice(0, 12).map((k) => ({
				name: k.name,
				count: k.count,
				ms: Number(k.totalMs.toFixed(1))
			}));
		}
		generator.release();
	}
	// each ratio of two configurations that ran (--configs may leave some out)
	const ratio = (slow: string, fast: string) =>
		times[slow] && times[fast] ? median(times[slow]) / median(times[fast]) : undefined;
	result.speedup = ratio('before', 'auto');
	result.prefixSpeedup = ratio('noPrefix', 'exact');
	result.slackSpeedup = ratio('exact', 'auto');
	result.mergeSpeedup = ratio('live', 'auto');
	result.fused128Speedup = ratio('auto', 'fused128');
	result.fused512Speedup = ratio('auto', 'fused512');
	result.rowsSpeedup = ratio('auto', 'rows');
	console.log(JSON.stringify(result));
	model.release();
}

main().catch((error) => {
	console.error(error);
	process.exit(1);
});
