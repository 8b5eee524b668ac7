/**
 * @file The tic-tac-toe learning run (issue 5, item 7): SFT on transcripts of legal random
 * play teaches a small random-init Llama (make-model.ts: ~5M parameters, a BPE tokenizer
 * learned from tic-tac-toe text) the move format; GRPO against the random opponent then
 * raises its score. Everything goes through the public API (TrainableModel, the Node
 * LocalBackend, the model's own OpenAI client, gatherTrajectoryGroups, tictactoe.rollout).
 *
 *   npx tsx scripts/learn-tictactoe.ts --out DIR [--tiny] [--steps 200] [--groups 16]
 *       [--group-size 8] [--lr 1e-4] [--sft-games 4096] [--sft-epochs 2] [--sft-batch 64]
 *       [--sft-lr 1e-3] [--rank 64] [--eval-games 200] [--eval-every 25] [--time-limit-s 540]
 *
 * Evaluation: `--eval-games` games from fixed seeds (disjoint from training's), scored win 1,
 * draw 0.5, loss 0, an illegal move the game's penalty (reported apart), as X and as O, at
 * temperature 0 (greedy: the headline) and at 1 (the sampling policy GRPO trains). Evaluated
 * before training, after SFT (the baseline), every --eval-every GRPO steps and at the end;
 * logged into the run's history as val/... and written to DIR/report.json with the training
 * curve. Resumable: the run keeps its checkpoints in DIR/run, so a second call with the same
 * --out (e.g. the next device call, after --time-limit-s stopped the first) continues.
 *
 * Choices (the base is random, so the adapter does all the work): LoRA r 64 on every
 * projection (near full rank for hidden 256); SFT lr 1e-3 in batches of 64 transcripts;
 * GRPO lr 1e-4, cispo, groups of 8 games of one scenario (the agent's mark and the
 * opponent's moves fixed per group, so rewards differ only by the policy's choices).
 */
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type OpenAI from 'openai';
import { gatherTrajectoryGroups, tictactoe, TrainableModel } from '../src/lib/agent';
import { LocalBackend } from '../src/lib/agent/backend/node';
import { legalPlayTranscripts } from '../src/lib/agent/tictactoe-sft';
import { MODEL_SIZES, writeTicTacToeModel } from './tictactoe/make-model';

interface Options {
	out: string;
	tiny: boolean;
	steps: number;
	groups: number;
	groupSize: number;
	lr: number;
	sftGames: number;
	sftEpochs: number;
	sftBatch: number;
	sftLr: number;
	rank: number;
	evalGames: number;
	evalEvery: number;
	timeLimitS: number;
	maxTokens: number;
}

function parse(argv: string[]): Options {
	const get = (name: string) => {
		const i = argv.indexOf(`--${name}`);
		return i >= 0 ? argv[i + 1] : undefined;
	};
	const num = (name: string, fallback: number) => {
		const v = get(name);
		if (v === undefined) return fallback;
		const n = Number(v);
		if (!Number.isFinite(n)) throw new Error(`--${name}: '${v}' is not a number`);
		return n;
	};
	const out = get('out');
	if (!out)
		throw new Error('usage: learn-tictactoe --out DIR [--tiny] [flags: see the file header]');
	const tiny = argv.includes('--tiny');
	return {
		out: resolve(out),
		tiny,
		steps: num('steps', tiny ? 3 : 200),
		groups: num('groups', tiny ? 2 : 16),
		groupSize: num('group-size', tiny ? 4 : 8),
		lr: num('lr', 1e-4),
		sftGames: num('sft-games', tiny ? 32 : 4096),
		sftEpochs: num('sft-epochs', tiny ? 2 : 2),
		sftBatch: num('sft-batch', tiny ? 8 : 64),
		sftLr: num('sft-lr', tiny ? 1e-2 : 1e-3),
		rank: num('rank', tiny ? 8 : 64),
		evalGames: num('eval-games', tiny ? 8 : 200),
		evalEvery: num('eval-every', tiny ? 2 : 25),
		timeLimitS: num('time-limit-s', 540),
		maxTokens: num('max-tokens', 16)
	};
}

const EVAL_SEED = 900_000_000;
const log = (line: string) => process.stderr.write(`[learn-tictactoe] ${line}\n`);
const exists = (p: string) =>
	stat(p).then(
		() => true,
		() => false
	);

interface Evaluation {
	step: number;
	phase: string;
	temperature: number;
	games: number;
	score: number;
	wins: number;
	draws: number;
	losses: number;
	illegal: number;
	scoreAsX: number;
	scoreAsO: number;
	seconds: number;
}

async function evaluate(
	client: OpenAI,
	model: TrainableModel,
	o: Options,
	temperature: number,
	phase: string
): Promise<Evaluation> {
	const t0 = performance.now();
	const [group] = await gatherTrajectoryGroups(
		[
			Array.from({ length: o.evalGames }, (_, i) =>
				tictactoe.rollout(client, {
					model: model.name,
					seed: EVAL_SEED + i,
					maxTokens: o.maxTokens,
					request: { temperature, seed: i }
				})
			)
		],
		{ maxExceptions: o.evalGames }
	);
	const games = group.trajectories;
	const outcome = (k: string) => games.filter((t) => t.metadata.outcome === k).length;
	const scoreOf = (ts: typeof games) =>
		ts.reduce((s, t) => s + (t.metadata.outcome === 'illegal' ? 0 : t.reward), 0) /
		Math.max(1, ts.length);
	const e: Evaluation = {
		step: await model.getStep(),
		phase,
		temperature,
		games: games.length,
		// Wins 1, draws 0.5, losses 0; an illegal move scores 0 here (its training penalty is
		// below 0, which would make an average of scores hard to read).
		score: scoreOf(games),
		wins: outcome('win'),
		draws: outcome('draw'),
		losses: outcome('loss'),
		illegal: outcome('illegal'),
		scoreAsX: scoreOf(games.filter((t) => t.metadata.agent_symbol === 'x')),
		scoreAsO: scoreOf(games.filter((t) => t.metadata.agent_symbol === 'o')),
		seconds: (performance.now() - t0) / 1000
	};
	const tag = temperature === 0 ? 'greedy' : `t${temperature}`;
	await model.log(
		{
			[`${tag}/score`]: e.score,
			[`${tag}/illegal`]: e.illegal / e.games,
			...(temperature === 0 ? { reward: e.score } : {})
		},
		{ split: 'val' }
	);
	log(
		`eval ${phase} step ${e.step} T=${temperature}: score ${e.score.toFixed(3)} (W ${e.wins} D ${e.draws} L ${e.losses} illegal ${e.illegal}) in ${e.seconds.toFixed(1)} s`
	);
	return e;
}

interface Report {
	options: Options;
	model?: { parameters: number; vocab: number };
	evaluations: Evaluation[];
	curve: {
		step: number;
		reward: number;
		loss: number | null;
		skipped: boolean;
		rolloutS: number;
		trainS: number;
	}[];
	sft: { step: number; loss: number }[];
	done: boolean;
	seconds: number;
}

async function main(): Promise<void> {
	const t0 = performance.now();
	const o = parse(process.argv.slice(2));
	const elapsed = () => (performance.now() - t0) / 1000;
	await mkdir(o.out, { recursive: true });
	const reportPath = join(o.out, 'report.json');
	const report: Report = (await exists(reportPath))
		? { ...(JSON.parse(await readFile(reportPath, 'utf8')) as Report), options: o }
		: { options: o, evaluations: [], curve: [], sft: [], done: false, seconds: 0 };
	const save = async () => {
		report.seconds += elapsed() - (report as { _t?: number })._t!;
		(report as { _t?: number })._t = elapsed();
		const { _t, ...rest } = report as Report & { _t?: number };
		void _t;
		await writeFile(reportPath, JSON.stringify(rest, null, 1) + '\n');
	};
	(report as { _t?: number })._t = 0;

	const modelDir = join(o.out, 'model');
	if (!(await exists(join(modelDir, 'model.safetensors')))) {
		report.model = await writeTicTacToeModel(modelDir, MODEL_SIZES[o.tiny ? 'tiny' : 'small']);
		log(`model: ${report.model.parameters} parameters, vocab ${report.model.vocab}`);
	}
	const backend = new LocalBackend({ runDir: () => join(o.out, 'run') });
	try {
		const model = new TrainableModel({
			name: 'tictactoe',
			project: 'learn-tictactoe',
			baseModel: modelDir,
			lora: { rank: o.rank, alpha: 2 * o.rank },
			seed: 7,
			maxContext: 1024
		});
		await model.register(backend);
		const client = model.openaiClient();
		const sftSteps = o.sftEpochs * Math.ceil(o.sftGames / o.sftBatch);
		const evaluated = (phase: string) => report.evaluations.some((e) => e.phase === phase);

		if (!evaluated('base')) {
			for (const T of [0, 1]) report.evaluations.push(await evaluate(client, model, o, T, 'base'));
			await save();
		}
		if ((await model.getStep()) < sftSteps) {
			if ((await model.getStep()) !== 0)
				throw new Error('SFT was interrupted part-way; start a new --out (SFT is short)');
			const transcripts = legalPlayTranscripts(o.sftGames, 1);
			const reports = await model.trainSft(transcripts, {
				learningRate: o.sftLr,
				batchSize: o.sftBatch,
				epochs: o.sftEpochs,
				shuffleSeed: 3
			});
			report.sft = reports.map((r) => ({ step: r.step, loss: r.metrics['sft/loss'] }));
			log(
				`SFT: ${reports.length} steps, loss ${report.sft[0]?.loss.toFixed(3)} -> ${report.sft.at(-1)?.loss.toFixed(3)}`
			);
			await save();
		}
		if (!evaluated('sft')) {
			for (const T of [0, 1]) report.evaluations.push(await evaluate(client, model, o, T, 'sft'));
			await model.deleteCheckpoints({ bestBy: 'val/reward' });
			await save();
		}

		const target = sftSteps + o.steps;
		let attempt = report.curve.length;
		// A round where every group ties changes nothing; give up after as many such rounds
		// as steps asked for (a policy that only makes illegal moves never gets a signal).
		let noSignal = 0;
		for (let step = await model.getStep(); step < target && noSignal < o.steps; attempt++) {
			if (elapsed() > o.timeLimitS) {
				log(`time limit: stopping at step ${step}; run again with the same --out to continue`);
				break;
			}
			const r0 = performance.now();
			const groups = await gatherTrajectoryGroups(
				Array.from({ length: o.groups }, (_, g) => {
					const scenario = 1_000_000 + attempt * 1009 + g;
					return Array.from({ length: o.groupSize }, (_, k) =>
						tictactoe.rollout(client, {
							model: model.name,
							seed: scenario,
							maxTokens: o.maxTokens,
							request: { temperature: 1, seed: scenario * 64 + k }
						})
					);
				})
			);
			const rolloutS = (performance.now() - r0) / 1000;
			const t1 = performance.now();
			const r = await model.train(
				groups,
				{ learningRate: o.lr },
				{ 'train/rollout_ms': rolloutS * 1000 }
			);
			step = r.step;
			if (r.skipped) noSignal++;
			report.curve.push({
				step,
				reward: r.metrics['train/reward'],
				loss: r.skipped ? null : r.metrics['train/loss'],
				skipped: !!r.skipped,
				rolloutS,
				trainS: (performance.now() - t1) / 1000
			});
			log(
				`step ${step - sftSteps}/${o.steps}: reward ${r.metrics['train/reward'].toFixed(3)}${r.skipped ? ` (${r.skipped})` : ''} rollouts ${rolloutS.toFixed(1)} s`
			);
			if (!r.skipped && (step - sftSteps) % o.evalEvery === 0 && step < target) {
				report.evaluations.push(await evaluate(client, model, o, 0, `grpo-${step - sftSteps}`));
				// Keep the disk small: the latest and the best by val/reward stay.
				await model.deleteCheckpoints({ bestBy: 'val/reward' });
			}
			await save();
		}
		if ((await model.getStep()) >= target && !evaluated('final')) {
			for (const T of [0, 1]) report.evaluations.push(await evaluate(client, model, o, T, 'final'));
			report.done = true;
		}
		await save();
		process.stdout.write(JSON.stringify(report) + '\n');
	} finally {
		await backend.close();
	}
}

main().then(
	() => process.exit(0),
	(error) => {
		process.stderr.write(String(error?.stack ?? error) + '\n');
		process.exit(1);
	}
);
