/**
 * @file The tic-tac-toe learning run (issue 5, item 7b), for the GPU machine: SFT on
 * transcripts of legal random play teaches a small random-init Llama
 * (scripts/tictactoe-model.ts: ~5M parameters, a byte-level BPE tokenizer learned from
 * tic-tac-toe conversations) the move format; GRPO against the random opponent then raises
 * its score. Everything goes through the public API: TrainableModel, the Node LocalBackend,
 * the model's own OpenAI client, gatherTrajectoryGroups and tictactoe.rollout (the same
 * agent code a user would write). A research harness, not part of the app: the library's run
 * engine (src/lib/run) is the supported way to train (experiments/README.md).
 *
 *   npx tsx experiments/learn-tictactoe.ts --out DIR [--tiny] [--steps 250] [--groups 32]
 *       [--group-size 16] [--lr 5e-4] ...        (all flags: tictactoe/options.ts)
 *   npx tsx experiments/tictactoe/report-md.ts DIR/report.json   (tables for BENCHMARKS.md)
 *
 * --tiny (SwiftShader, ~1-4 min) checks the plumbing of every phase with a 35k-parameter model
 * that learns nothing in 2 SFT steps: its games are all illegal first moves, so its GRPO
 * rounds have no reward spread and it stops "stuck" after --max-no-signal rounds; a second
 * call with `--tiny --steps 0` resumes and runs the final evaluation.
 *
 * Phases: make the model -> evaluate the base -> SFT -> evaluate (the SFT baseline) -> GRPO,
 * evaluating every --eval-every steps -> final evaluation. Each evaluation plays --eval-games
 * games from fixed seeds, greedy (the headline) and at T = 1 (the policy GRPO samples);
 * tictactoe/evaluate.ts says how they are scored. DIR/report.json holds the options, the SFT
 * losses, the GRPO curve (train reward, illegal moves, loss, seconds per step) and every
 * evaluation; DIR/run holds checkpoints and history.jsonl (val/... metrics included).
 *
 * Resumable under a time limit: before each phase (an SFT chunk, a GRPO step, an evaluation)
 * the run checks that it should end within --time-limit-s (from the durations measured so
 * far); if not, it saves and exits 0 with `"done": false`, and the same command with the same
 * --out continues from the latest checkpoint (the model's step says where: SFT batches first,
 * then GRPO steps). A hard kill loses at most the step in flight. On a machine that comes back
 * bare (the GPU machine after it went idle), `--save-state DIR` writes the resumable state as
 * a few flat files at the end of each call and `--load-state DIR` restores them into a new
 * --out (tictactoe/state.ts); the model folders are rewritten from the seed and the state.
 *
 * Choices, and why. The target is hard: taking wins and blocking losses scores 0.880 against
 * this opponent, optimal play 0.980, random play 0.500 (tictactoe/policy-values.ts), so the
 * model must read threats off the board text from a game's single reward. The same GRPO on
 * an MLP policy that gets the board and the legal moves for free (tictactoe/mlp-grpo.ts)
 * passes 0.85 greedy only after ~100k games, and groups of 16 learn faster than groups of 8
 * at equal games; so:
 * - SFT: 16384 transcripts, one pass (fresh games beat a second epoch at equal cost), batches
 *   of 64 (256 steps), lr 1e-3 decaying linearly to 1e-4: the move format and the legality of
 *   moves; imitating random play, its score is random play's (0.50 when every move is legal).
 * - The model (scripts/tictactoe-model.ts) starts its final norm at 7.8, not 1, or the frozen
 *   random LM head would cap every token's probability near 0.27 (its header says why).
 * - GRPO on the merged SFT model (--grpo-base sft-merged): SFT's adapter is folded into the
 *   base weights (tictactoe/merge-sft.ts) and GRPO trains a fresh adapter with a KL penalty
 *   to that SFT policy (--kl-beta 0.05, the reference computed with the LoRA off). Trained on
 *   over SFT's adapter (sft-adapter) with no KL, as the first attempts did, the policy became
 *   deterministic within ~25-100 steps, even sampled at T = 1.5, and froze at 0.79-0.815
 *   greedy: cispo's gradient, advantage x (1 - p) per token, vanishes as p -> 1 (BENCHMARKS.md,
 *   tic-tac-toe). The KL keeps it sampling (the log's `nll`: mean -logprob per sampled token).
 * - 32 groups x 16 games per step (512 games), 250 steps (128k games), lr 2e-4 (the base is
 *   random, so the adapters do all the work; ART's 5e-6 is for pretrained 8B models; 5e-4
 *   swung to 94% illegal moves), cispo (ART's default), rollouts at T = 1. A group shares
 *   the agent's mark and gives each game its own opponent draws (--opponents distinct, as
 *   ART's groups are independent games; 'shared' also repeats the opponent's draws).
 * - LoRA r 64 (alpha 128) on every projection: near full rank at hidden 256.
 * - Requests carry no sampling seed (a seed in rollout's request would repeat the same random
 *   numbers at every turn of a game: evaluate.ts); each turn of all 512 games decodes
 *   together, 256 sequences per decode call at most.
 */
import { appendFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type OpenAI from 'openai';
import { gatherTrajectoryGroups, tictactoe, TrainableModel } from '../src/lib/agent';
import { LocalBackend } from '../src/lib/agent/backend/node/backend';
import { legalPlayTranscripts } from '../src/lib/agent/envs/tictactoe/demonstrations';
import type { Trajectory } from '../src/lib/agent/trajectory';
import { Rng, shuffled } from '../src/lib/util/random';
import { checkpointName } from '../src/lib/grpo/store/run-store';
import { ADAPTER_WEIGHTS_FILE } from '../src/lib/model/hf/peft-adapter';
import { describeEvaluation, evaluate, type Evaluation } from './tictactoe/evaluate';
import { MODEL_SIZES, writeTicTacToeModel } from '../scripts/tictactoe-model';
import { parseLearnArgs, type LearnOptions } from './tictactoe/options';
import { loadReport, saveReport, type CurvePoint, type Report } from './tictactoe/report';
import { keepAdapter, MERGED_DIR, SFT_ADAPTER_DIR, writeMergedModel } from './tictactoe/merge-sft';
import { latestCheckpoint, loadState, saveState } from './tictactoe/state';
import { exists } from '../scripts/exists';

const T0 = performance.now();
const elapsed = () => (performance.now() - T0) / 1000;

/** Seeds of the SFT transcripts (50 * 1_000_003 + i) and of GRPO's scenarios (1e6 + ...). */
const SFT_SEED = 50;
const SCENARIO_SEED = 1_000_000;
/** The model GRPO trains with --grpo-base sft-merged (its run: OUT/run-grpo). */
const GRPO_MODEL = 'tictactoe-grpo';
/** SFT batches per trainSft call (a resumable chunk). */
const SFT_CHUNK = 16;

let logFile: string | undefined;
function log(line: string): void {
	process.stderr.write(`[learn-tictactoe ${elapsed().toFixed(0)}s] ${line}\n`);
	if (logFile) void appendFile(logFile, `${new Date().toISOString()} ${line}\n`);
}

const mean = (xs: readonly number[]) => xs.reduce((s, x) => s + x, 0) / Math.max(1, xs.length);

/** Mean -logprob per sampled token over the games' choices (the policy's spread as sampled). */
function sampledNll(games: readonly Trajectory[]): number {
	const logprobs = games.flatMap((t) => t.choices().flatMap((c) => c.tabrl?.logprobs ?? []));
	return -mean(logprobs);
}

class LearnRun {
	#stoppedBy = '';
	#model: TrainableModel | undefined;
	#client: OpenAI | undefined;
	/** True for a model whose own steps are GRPO steps (the fresh adapter of 'sft-merged'). */
	#grpoOnly = false;
	constructor(
		readonly o: LearnOptions,
		readonly report: Report,
		readonly save: () => Promise<void>
	) {}

	/** Trains and evaluates `model` from now on. */
	use(model: TrainableModel, grpoOnly: boolean): void {
		this.#model = model;
		this.#client = model.openaiClient();
		this.#grpoOnly = grpoOnly;
	}

	get model(): TrainableModel {
		if (!this.#model) throw new Error('learn-tictactoe: no model in use');
		return this.#model;
	}

	get client(): OpenAI {
		if (!this.#client) throw new Error('learn-tictactoe: no model in use');
		return this.#client;
	}

	get stopped(): string {
		return this.#stoppedBy;
	}

	/** True when `seconds` more still end within the limit; else records why it stops. */
	fits(seconds: number, what: string): boolean {
		if (this.#stoppedBy) return false;
		if (elapsed() + seconds <= this.o.timeLimitS) return true;
		this.#stoppedBy = `time limit before ${what}`;
		log(
			`${this.#stoppedBy} (${elapsed().toFixed(0)} s + ~${seconds.toFixed(0)} s > ` +
				`${this.o.timeLimitS} s): run the same command again to continue`
		);
		return false;
	}

	/** Seconds the last evaluation pair took (0 before the first). */
	get evalEstimate(): number {
		const last = this.report.evaluations.slice(-2);
		return 1.2 * last.reduce((s, e) => s + e.seconds, 0);
	}

	async grpoStep(): Promise<number> {
		return (await this.model.getStep()) - (this.#grpoOnly ? 0 : (this.report.sftEnd ?? 0));
	}

	/** Greedy and T = 1 evaluations at `phase`, unless done already; false when out of time. */
	async evaluatePhase(phase: string): Promise<boolean> {
		const grpoStep = this.report.sftEnd === null ? 0 : await this.grpoStep();
		for (const temperature of [0, 1]) {
			// base and sft happen once; grpo and final at a GRPO step.
			const once = phase === 'base' || phase === 'sft';
			const done = this.report.evaluations.some(
				(e) =>
					e.phase === phase && e.temperature === temperature && (once || e.grpoStep === grpoStep)
			);
			if (done) continue;
			if (!this.fits(this.evalEstimate / 2, `the ${phase} evaluation`)) return false;
			const e: Evaluation = {
				phase,
				step: await this.model.getStep(),
				grpoStep,
				...(await evaluate(this.client, this.model.name, {
					games: this.o.evalGames,
					temperature,
					maxTokens: this.o.maxTokens
				}))
			};
			this.report.evaluations.push(e);
			const tag = temperature === 0 ? 'greedy' : 't1';
			await this.model.log(
				{
					...(temperature === 0 ? { reward: e.score } : {}),
					[`${tag}_score`]: e.score,
					[`${tag}_score_x`]: e.asX.score,
					[`${tag}_score_o`]: e.asO.score,
					[`${tag}_illegal`]: e.illegal
				},
				{ split: 'val' }
			);
			log(describeEvaluation(e));
			await this.save();
		}
		return true;
	}

	/** SFT in chunks of SFT_CHUNK batches; the model's step is the next batch's index. */
	async sft(): Promise<boolean> {
		const o = this.o;
		const perEpoch = Math.ceil(o.sftGames / o.sftBatch);
		const total = o.sftEpochs * perEpoch;
		const transcripts = legalPlayTranscripts(o.sftGames, SFT_SEED);
		let chunkS = 0;
		for (let step = await this.model.getStep(); step < total;) {
			if (!this.fits(1.5 * chunkS, `SFT step ${step}`)) return false;
			const epoch = Math.floor(step / perEpoch);
			const first = step % perEpoch;
			const batches = Math.min(SFT_CHUNK, perEpoch - first);
			const order = shuffled(transcripts, 1000 + epoch);
			const chunk: Trajectory[] = order.slice(first * o.sftBatch, (first + batches) * o.sftBatch);
			// Linear decay from sftLr to sftLr / 10 over all batches, constant within a chunk.
			const lr = o.sftLr * (1 - (0.9 * step) / total);
			const t = performance.now();
			const reports = await this.model.trainSft(chunk, {
				learningRate: lr,
				batchSize: o.sftBatch,
				tokenBudget: o.tokenBudget
			});
			chunkS = (performance.now() - t) / 1000;
			for (const r of reports)
				if (!r.skipped) this.report.sft.push({ step: r.step, loss: r.metrics['sft/loss'], lr });
			const next = await this.model.getStep();
			if (next === step)
				throw new Error(
					`SFT made no step at batch ${step} (${reports[0]?.skipped}): lower --sft-lr`
				);
			step = next;
			log(
				`SFT ${step}/${total} (epoch ${epoch + 1}/${o.sftEpochs}): loss ` +
					`${this.report.sft.at(-1)?.loss.toFixed(4)} lr ${lr.toExponential(2)}, ${chunkS.toFixed(1)} s per ${batches}`
			);
			await this.model.deleteCheckpoints(); // every SFT step is checkpointed: keep the disk small
			await this.save();
		}
		this.report.sftEnd = await this.model.getStep();
		await this.save();
		return true;
	}

	/** One rollout round and one GRPO step (or a skipped one when no group has a spread). */
	async grpoRound(): Promise<CurvePoint> {
		const o = this.o;
		const round = this.report.rounds++;
		const r0 = performance.now();
		const groups = await gatherTrajectoryGroups(
			Array.from({ length: o.groups }, (_, g) => {
				const seed = SCENARIO_SEED + round * 1009 + g;
				// 'distinct': the group's mark, each game's opponent from its own seed.
				const draws = new Rng(seed);
				const mark: tictactoe.Mark = draws.int(2) === 0 ? 'x' : 'o';
				return Array.from({ length: o.groupSize }, () => {
					const game = o.opponents === 'shared' ? { seed } : { seed: draws.int(2 ** 31), mark };
					return () =>
						tictactoe.rollout(this.client, {
							model: this.model.name,
							...game,
							maxTokens: o.maxTokens,
							request: { temperature: o.temperature }
						});
				});
			}),
			{ maxExceptions: 0.05 }
		);
		const rolloutS = (performance.now() - r0) / 1000;
		const t1 = performance.now();
		// Linear from lr at step 0 to lr * lrEndRatio at --steps (a run branched from another
		// one's state continues on the schedule at its step).
		const lr = o.lr * (1 - (1 - o.lrEndRatio) * Math.min(1, (await this.grpoStep()) / o.steps));
		const r = await this.model.train(
			groups,
			{
				learningRate: lr,
				temperature: o.temperature,
				tokenBudget: o.tokenBudget,
				klBeta: o.klBeta
			},
			{ 'train/rollout_s': rolloutS }
		);
		const games = groups.flatMap((g) => g.trajectories);
		const point: CurvePoint = {
			grpoStep: await this.grpoStep(),
			reward: r.metrics['train/reward'],
			illegal: mean(games.map((t) => (t.metadata.outcome === 'illegal' ? 1 : 0))),
			loss: r.skipped ? null : r.metrics['train/loss'],
			skipped: r.skipped ?? null,
			lr,
			sampledNll: sampledNll(games),
			rolloutS,
			trainS: (performance.now() - t1) / 1000
		};
		this.report.curve.push(point);
		return point;
	}

	async grpo(): Promise<boolean> {
		const o = this.o;
		let noSignal = 0;
		for (let step = await this.grpoStep(); step < o.steps;) {
			// (an evaluation the previous call had no time for comes first)
			if (step > 0 && step % o.evalEvery === 0 && !(await this.evaluatePhase('grpo'))) return false;
			const recent = this.report.curve.slice(-5).map((c) => c.rolloutS + c.trainS);
			const stepS = recent.length ? 1.3 * Math.max(...recent) : 0;
			const evalDue = (step + 1) % o.evalEvery === 0 || step + 1 === o.steps;
			if (!this.fits(stepS + (evalDue ? this.evalEstimate : 0), `GRPO step ${step + 1}`))
				return false;
			const c = await this.grpoRound();
			log(
				`GRPO ${c.grpoStep}/${o.steps}: reward ${c.reward.toFixed(3)} illegal ` +
					`${(100 * c.illegal).toFixed(1)}%${c.skipped ? ` (skipped: ${c.skipped})` : ''}; ` +
					`lr ${c.lr?.toExponential(2)}; nll ${c.sampledNll?.toFixed(3)}; ` +
					`rollouts ${c.rolloutS.toFixed(1)} s, train ${c.trainS.toFixed(1)} s`
			);
			await this.save();
			if (c.grpoStep === step) {
				if (++noSignal >= o.maxNoSignal) {
					this.#stoppedBy = `stuck: ${noSignal} rounds in a row without a reward spread`;
					log(`${this.#stoppedBy} (every game of each group scored alike; more SFT may help)`);
					return false;
				}
				continue;
			}
			noSignal = 0;
			step = c.grpoStep;
			if (step % o.evalEvery === 0 && step < o.steps) {
				if (!(await this.evaluatePhase('grpo'))) return false;
				// Every step is checkpointed: keep the latest and the best by val/reward.
				await this.model.deleteCheckpoints({ bestBy: 'val/reward' });
			}
		}
		return true;
	}
}

/**
 * OUT/sft-adapter (SFT's last checkpoint's adapter) and OUT/model-sft (OUT/model with it
 * merged), each unless already there (a resumed run restores sft-adapter, not model-sft).
 */
async function prepareMergedBase(out: string): Promise<void> {
	const adapter = join(out, SFT_ADAPTER_DIR);
	if (!(await exists(join(adapter, ADAPTER_WEIGHTS_FILE)))) {
		const step = await latestCheckpoint(out, 'run');
		if (step === undefined) throw new Error(`${out}: SFT ended, but no SFT checkpoint is left`);
		await keepAdapter(join(out, 'run', 'checkpoints', checkpointName(step)), adapter);
	}
	if (!(await exists(join(out, MERGED_DIR, 'model.safetensors')))) {
		await writeMergedModel(join(out, 'model'), adapter, join(out, MERGED_DIR));
		log(`SFT's adapter merged into ${join(out, MERGED_DIR)}`);
	}
}

async function main(): Promise<void> {
	const o = parseLearnArgs(process.argv.slice(2));
	await mkdir(o.out, { recursive: true });
	logFile = join(o.out, 'log.txt');
	if (o.loadState && (await loadState(o.loadState, o.out)))
		log(`restored the state saved in ${o.loadState}`);
	const reportPath = join(o.out, 'report.json');
	const report = await loadReport(o, reportPath);
	const call = { startedAt: new Date().toISOString(), seconds: 0, stoppedBy: '' };
	report.calls.push(call);
	const save = async () => {
		call.seconds = elapsed();
		await saveReport(report, reportPath);
	};

	const modelDir = join(o.out, 'model');
	if (!(await exists(join(modelDir, 'model.safetensors')))) {
		report.model = await writeTicTacToeModel(modelDir, MODEL_SIZES[o.size]);
		log(`model: ${report.model.parameters} parameters, vocab ${report.model.vocab}`);
	}
	const backend = new LocalBackend({
		runDir: (spec) => join(o.out, spec.name === GRPO_MODEL ? 'run-grpo' : 'run')
	});
	try {
		const open = async (name: string, baseModel: string) => {
			const model = new TrainableModel({
				name,
				project: 'learn-tictactoe',
				baseModel,
				lora: { rank: o.rank, alpha: 2 * o.rank },
				seed: 7,
				// The longest game is ~310 tokens with this tokenizer, plus one reply.
				maxContext: 512,
				maxBatch: Math.min(256, Math.max(o.groups * o.groupSize, o.evalGames))
			});
			const registration = await model.register(backend);
			log(`${name} registered at step ${registration.step} (${elapsed().toFixed(1)} s)`);
			return model;
		};
		const merged = o.grpoBase === 'sft-merged';
		const sftDone = report.sftEnd !== null;
		const run = new LearnRun(o, report, save);
		// 'sft-merged' needs the SFT model only until SFT ends.
		if (!(merged && sftDone)) run.use(await open('tictactoe', modelDir), false);
		let finished = (sftDone || (await run.evaluatePhase('base'))) && (sftDone || (await run.sft()));
		if (finished && merged) {
			// the SFT model's GPU memory is not needed past this point
			await backend.unregister('tictactoe');
			await prepareMergedBase(o.out);
			run.use(await open(GRPO_MODEL, join(o.out, MERGED_DIR)), true);
		}
		// (with 'sft-merged' the SFT evaluation is the merged model's with its adapter at 0)
		finished =
			finished &&
			(await run.evaluatePhase('sft')) &&
			(await run.grpo()) &&
			(await run.evaluatePhase('final'));
		report.done = finished;
		call.stoppedBy = finished ? 'done' : run.stopped;
		await save();
		const last = (T: number) => report.evaluations.filter((e) => e.temperature === T).at(-1);
		log(
			`${finished ? 'done' : 'stopped (resumable)'}: GRPO step ${await run.grpoStep()}/${o.steps}; ` +
				`latest greedy ${last(0)?.score.toFixed(3)}, T=1 ${last(1)?.score.toFixed(3)}; ${reportPath}`
		);
	} finally {
		await backend.close();
		if (o.saveState) {
			const files = await saveState(o.out, o.saveState);
			log(`state saved in ${o.saveState}: ${files.join(', ')}`);
		}
	}
}

main().then(
	() => process.exit(0),
	(error) => {
		process.stderr.write(String(error?.stack ?? error) + '\n');
		process.exit(1);
	}
);
