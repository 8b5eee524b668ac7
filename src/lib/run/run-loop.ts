/**
 * @file The one run loop: executes a recipe (recipe.ts) on a registered TrainableModel as a
 * sequence of resumable phases, emitting events (events.ts). The page (through the
 * worker), `cli train`, the warm-start script and the tests all drive this loop; agent code
 * that writes its own loop uses the same TrainableModel API underneath.
 *
 * Where a run stands is read from the model, so a resumed run continues where it stopped:
 * steps [0, sftSteps) are SFT steps, then GRPO steps. Stop (the signal) takes effect
 * within one rollout turn: rollouts are aborted and the round is dropped, untrained.
 *
 * Seeds (all from agent/envs/seeds.ts): SFT demonstrations from `sft.seed`, their order per
 * epoch from sftOrderSeed; GRPO round r (r = grpoStep * 16 + retry) plays group g's
 * scenario scenarioSeed(seed, r, g), each game sampled from its own samplingSeed;
 * evaluations play EVAL_SEED + i.
 */
import type { Judge, JudgeOptions } from '../agent/ruler';
import type { TrainableModel } from '../agent/model';
import type { Trajectory } from '../agent/trajectory';
import { shuffled } from '../util/random';
import { ENVIRONMENTS } from '../agent/envs/registry';
import { sftOrderSeed } from '../agent/envs/seeds';
import { evaluateOnce } from './evaluate';
import { playRound, recipeJudge } from './round';
import type { PausePhase, RunEvent, RunStatus, RunSummary } from './events';
import { RunError } from './errors';
import { checkLiveSettings, LR_WARMUP, warmupFactor, type LiveSettings } from './live-settings';
import { evalDue, sftSteps, validateRecipe, type Recipe } from './recipe';
import { EVAL_GAMES, GROUPS_PLAYED, nextGroups, sizingReason, stepSeconds } from './sizing';

export interface RunOptions {
	/** Stop: aborts the rollouts in flight and ends the run 'stopped'. */
	signal?: AbortSignal;
	onEvent?: (event: RunEvent) => void;
	/** The API key of the recipe's RULER judge (never part of the recipe: recipe.ts). */
	judgeApiKey?: string;
	/** Another judge than the recipe's endpoint (e.g. a client in the same process). */
	judge?: Judge | JudgeOptions;
	/**
	 * Step-through: called at each pause point of a GRPO step (events.ts PausePhase). A
	 * promise pauses the run there ('paused' event) until it settles; undefined goes on at
	 * once (stepping turned off mid-run). Stop ends a waiting run at once.
	 */
	pause?: (phase: PausePhase, step: number) => Promise<void> | undefined;
	/** After each update, a 'shift' event: how it moved the best and worst game's tokens. */
	policyShift?: boolean;
	/**
	 * Settings changed while the run was paused (the learning rate, KL β, temperature): read
	 * before each round of games and each update, they replace the recipe's from then on.
	 * Each step's history line records the values it trained with.
	 */
	live?: () => LiveSettings | undefined;
}

/** Retries of one GRPO step with new scenarios, at most (the round number's spacing). */
const ROUNDS_PER_STEP = 16;

class Stopped extends Error {}

export async function runRecipe(
	model: TrainableModel,
	input: Recipe,
	options: RunOptions = {}
): Promise<RunSummary> {
	const recipe = validateRecipe(input);
	const env = ENVIRONMENTS[recipe.environment];
	if (recipe.sft && !env.demonstrations)
		throw new RunError(
			'invalid-recipe',
			`sft: ${env.name} has no demonstrations to imitate; use a warm start instead.`
		);
	const { signal } = options;
	const emit = (event: RunEvent) => {
		try {
			options.onEvent?.(event);
		} catch {
			// a watcher that fails must not fail the run
		}
	};
	const checkStop = () => {
		if (signal?.aborted) throw new Stopped();
	};
	/** A step-through pause: its event, then wait for the pause (or Stop). */
	const pause = async (phase: PausePhase, step: number) => {
		checkStop();
		const waiting = options.pause?.(phase, step);
		if (!waiting) return;
		emit({ type: 'paused', phase, step });
		let onAbort = () => {};
		const stopped = new Promise<void>((resolve) => (onAbort = resolve));
		signal?.addEventListener('abort', onAbort, { once: true });
		try {
			await Promise.race([waiting, stopped]);
		} finally {
			signal?.removeEventListener('abort', onAbort);
		}
		checkStop();
	};
	const sftTotal = sftSteps(recipe);
	const client = model.openaiClient();
	const judge = recipeJudge(recipe, options);
	let lastReward: number | null = null;
	let lastEval: number | null = null;
	const summary = async (status: RunStatus, reason: string): Promise<RunSummary> => {
		const step = await model.getStep();
		const s: RunSummary = {
			status,
			reason,
			step,
			grpoStep: Math.max(0, step - sftTotal),
			reward: lastReward,
			evalReward: lastEval
		};
		emit({ type: 'end', summary: s });
		return s;
	};

	const evaluate = async (): Promise<void> => {
		const step = await model.getStep();
		const history = await model.history();
		// sized: the run's first evaluation finds its size (null), the later ones play as many
		const auto = recipe.eval.sized ?? !!recipe.grpo.autoSize;
		const sized = history.find((h) => typeof h[EVAL_GAMES] === 'number')?.[EVAL_GAMES];
		let games = auto ? ((sized as number | undefined) ?? null) : recipe.eval.games;
		for (const temperature of recipe.eval.temperatures) {
			const key = temperature === 0 ? 'val/reward' : `val/reward_t${temperature}`;
			if (history.some((h) => h.step === step && typeof h[key] === 'number')) continue;
			checkStop();
			emit({ type: 'phase', phase: 'eval', step });
			const report = await evaluateOnce(
				env,
				client,
				model.name,
				recipe,
				{ temperature, games },
				step,
				signal,
				(done, total) => emit({ type: 'progress', phase: 'eval', step, done, total })
			);
			if (temperature === 0) lastEval = report.reward;
			const tag = temperature === 0 ? '' : `_t${temperature}`;
			const found = games === null;
			games = report.games;
			await model.log({
				[key]: report.reward,
				...(found ? { [EVAL_GAMES]: games } : {}),
				...Object.fromEntries(Object.entries(report.metrics).map(([k, v]) => [`val/${k}${tag}`, v]))
			});
			emit({ type: 'eval', report });
		}
	};

	try {
		// SFT: resumed mid-way, it continues where the last saved step left it.
		let step = await model.getStep();
		if (step < sftTotal) {
			const sft = recipe.sft!;
			const perEpoch = Math.ceil(sft.games / sft.batchSize);
			const demos = await env.demonstrations!(sft.games, sft.seed, recipe.envOptions ?? {}, {
				explore: sft.explore,
				readEveryChange: sft.readEveryChange,
				skill: sft.skill
			}); // (checked above)
			while (step < sftTotal) {
				checkStop();
				emit({ type: 'phase', phase: 'sft', step });
				const epoch = Math.floor(step / perEpoch);
				const first = step % perEpoch;
				// chunks start at multiples of sft.chunk, so a resumed run trains the same chunks
				const chunkStart = step - (step % sft.chunk);
				const batches = Math.min(sft.chunk - (step % sft.chunk), perEpoch - first, sftTotal - step);
				const order = shuffled(demos, sftOrderSeed(sft.seed, epoch));
				const chunk: Trajectory[] = order.slice(
					first * sft.batchSize,
					(first + batches) * sft.batchSize
				);
				// Linear decay over all SFT steps, constant within a chunk.
				const lr =
					sft.learningRate -
					((sft.learningRate - sft.learningRateEnd) * chunkStart) / Math.max(1, sftTotal - 1);
				const reports = await model.trainSft(chunk, {
					learningRate: lr,
					batchSize: sft.batchSize,
					tokenBudget: recipe.grpo.tokenBudget
				});
				for (const r of reports)
					emit({
						type: 'step',
						split: 'sft',
						step: r.step,
						skipped: r.skipped,
						metrics: r.metrics
					});
				const next = await model.getStep();
				if (next === step)
					return summary(
						'stuck',
						`SFT made no step at ${step} (${reports[0]?.skipped}): lower its learning rate`
					);
				step = next;
				await model.deleteCheckpoints({ bestBy: 'val/reward' });
			}
		}

		// GRPO, evaluating before the first step, every `eval.every` steps and at the end
		// (eval.afterGames: those but the last after the next step's games, before its update).
		let noSignal = 0;
		// games per step: the recipe's, or (auto) set by the last trained step's time; a resumed
		// run reads that step from its history, so it sizes exactly as it would have gone on
		const auto = recipe.grpo.autoSize;
		let groupsNow = recipe.grpo.groups;
		/** The GRPO settings now: the recipe's, with any changed while paused. */
		const grpoNow = () => ({ ...recipe.grpo, ...checkLiveSettings(options.live?.() ?? {}) });
		/** What the next round plays: the settings now, at the groups sized last. */
		let played: Recipe = recipe;
		const playGroups = (
			at: number,
			groups: number,
			before: { groups: number; seconds: number } | null
		) => {
			if (!auto) return;
			groupsNow = groups;
			const { groupSize } = recipe.grpo;
			const reason = sizingReason(before, groups, groupSize, auto);
			emit({ type: 'sized', step: at, groups, groupSize, reason });
		};
		if (auto) {
			const last = (await model.history()).findLast((h) => typeof h[GROUPS_PLAYED] === 'number');
			const seconds = last ? stepSeconds(last) : NaN;
			const groups = last
				? nextGroups(last[GROUPS_PLAYED] as number, seconds, auto)
				: nextGroups(recipe.grpo.groups, NaN, auto);
			playGroups(step, groups, last ? { groups: last[GROUPS_PLAYED] as number, seconds } : null);
		}
		for (;;) {
			step = await model.getStep();
			const grpoStep = step - sftTotal;
			const last = grpoStep >= recipe.grpo.steps;
			const due = evalDue(recipe, grpoStep);
			const evalAfterGames = due && !!recipe.eval.afterGames && !last;
			if (due && !evalAfterGames) await evaluate();
			if (last) break;
			checkStop();
			played = { ...recipe, grpo: { ...grpoNow(), groups: groupsNow } };
			const round = grpoStep * ROUNDS_PER_STEP + noSignal;
			const rolloutStart = performance.now();
			const { groups, judged, judgeFailure } = await playRound(
				env,
				client,
				model.name,
				played,
				round,
				step,
				emit,
				judge,
				signal
			);
			const rolloutMs = performance.now() - rolloutStart;
			checkStop();
			if (groups.length) {
				await pause('rewards', step);
				await pause('advantages', step);
			}
			if (judge && groups.length === 0) {
				// the judge failed on every group: nothing it scored is trained on
				emit({
					type: 'step',
					split: 'train',
					step,
					skipped: 'judge-failed',
					judgeFailure: judgeFailure ?? undefined,
					metrics: judged
				});
				if (++noSignal >= Math.min(recipe.maxNoSignal, ROUNDS_PER_STEP))
					return summary(
						'stuck',
						`the judge failed on every group in ${noSignal} round${noSignal === 1 ? '' : 's'} in a row ` +
							`at GRPO step ${grpoStep}: ${judgeFailure ?? 'no scores'}`
					);
				continue;
			}
			// (a round retried after no spread finds this step's evaluation done: it is skipped)
			if (evalAfterGames) await evaluate();
			await pause('update', step);
			emit({ type: 'phase', phase: 'train', step });
			const g = grpoNow();
			const warmup = warmupFactor(g, grpoStep);
			const report = await model.train(
				groups,
				{
					loss: g.loss,
					learningRate: g.learningRate * warmup,
					klBeta: g.klBeta,
					// the games' own (a temperature changed at the update's pause plays next round)
					temperature: played.grpo.temperature,
					tokenBudget: g.tokenBudget,
					scaleRewards: g.scaleRewards ?? true,
					iterations: g.iterations,
					miniBatches: g.miniBatches,
					onMicroBatch: (done, total) =>
						emit({ type: 'progress', phase: 'train', step, done, total })
				},
				{
					'train/rollout_ms': rolloutMs,
					// what this step trained with (changed while paused, or the recipe's)
					'train/kl_beta': g.klBeta,
					...(warmup < 1 ? { [LR_WARMUP]: warmup } : {}),
					'train/temperature': played.grpo.temperature,
					...(auto ? { [GROUPS_PLAYED]: played.grpo.groups } : {}),
					...judged
				},
				{ shift: !!options.policyShift }
			);
			lastReward = report.metrics['train/reward'] ?? null;
			if (report.shift) emit({ type: 'shift', step: report.step, round, ...report.shift });
			emit({
				type: 'step',
				split: 'train',
				step: report.step,
				skipped: report.skipped,
				...(judgeFailure ? { judgeFailure } : {}),
				metrics: report.metrics
			});
			if (report.skipped) {
				if (++noSignal >= Math.min(recipe.maxNoSignal, ROUNDS_PER_STEP)) {
					// every game of the round alike (not only within each group): say the score,
					// which may be the best there is (a warm start that already plays right)
					const m = report.metrics;
					const alike =
						m['train/reward_std_dev'] === 0 && Number.isFinite(m['train/reward'])
							? `every game scored ${Number(m['train/reward'].toFixed(3))}: the policy plays these games one way; ` +
								'if that is the best score there is nothing left to learn here, otherwise a warm start or more SFT may help'
							: 'every game of each group scored alike: a warm start or more SFT may help';
					return summary(
						'stuck',
						`no reward spread in ${noSignal} round${noSignal === 1 ? '' : 's'} in a row at GRPO step ${grpoStep} (${alike})`
					);
				}
				continue;
			}
			noSignal = 0;
			if (auto) {
				const before = { groups: played.grpo.groups, seconds: stepSeconds(report.metrics) };
				playGroups(report.step, nextGroups(before.groups, before.seconds, auto), before);
			}
			// every step is checkpointed: keep the latest and the best by val/reward
			await model.deleteCheckpoints({ bestBy: 'val/reward' });
			if (report.step - sftTotal < recipe.grpo.steps) await pause('updated', report.step);
		}
		return summary('done', `reached GRPO step ${recipe.grpo.steps}`);
	} catch (error) {
		// Stopped only when Stop was pressed: an AbortError of its own (a readback refused by a
		// lost GPU device) is a failure, not a stop.
		if (error instanceof Stopped || signal?.aborted) return summary('stopped', 'stopped');
		throw error;
	}
}

/** One round of rollouts: `groups` scenarios of `groupSize` games, all concurrent. */
