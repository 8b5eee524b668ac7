/**
 * The run loop over the Node LocalBackend on Dawn, two tiny Llamas (the letters fixture and
 * the tic-tac-toe model at smoke size): auto-sized steps across a resume; letters ends
 * 'done' with its events, evaluations and pruned checkpoints; tic-tac-toe on a random model
 * ends 'stuck'; Stop mid-rollout; an SFT phase resumes mid-way; RULER scores via a scripted
 * judge. One backend for the file (new ones recompile every kernel).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MODEL_SIZES, writeTicTacToeModel } from '../../../scripts/tictactoe-model';
import { TrainableModel } from '../../../src/lib/agent';
import { LocalBackend } from '../../../src/lib/agent/backend/node/backend';
import { NodeRunStore } from '../../../src/lib/grpo/store/node/run-store';
import { writeModelFiles } from '../../../src/lib/model/hf/node/checkpoint';
import {
	GROUPS_PLAYED,
	nextGroups,
	preset,
	runRecipe,
	stepSeconds,
	LR_WARMUP,
	recordedSettings,
	type LiveSettings,
	type Recipe,
	type RunEvent
} from '../../../src/lib/run';
import { makeFixture } from '../../../src/lib/testing/fixtures';
import { lettersReward } from '../../../src/lib/agent/envs/letters/rules';
import { squareName } from '../../../src/lib/agent/envs/tictactoe/rollout';
import { ticTacToeRule } from '../../../src/lib/testing/tictactoe-judge';
import { DEFAULT_RUBRIC, judgeSystemPrompt, RESPONSE_FORMAT } from '../../../src/lib/agent/ruler';
import {
	ok,
	ScriptedJudge,
	trajectoriesOf,
	type Behaviour
} from '../../../src/lib/testing/scripted-judge';

let root: string;
let lettersBase: string;
let ticTacToeBase: string;
let movesBase: string;
let backend: LocalBackend;

/** A judge that scores each letters trajectory by `rule` of its last reply. */
const byRule =
	(rule: (reply: string) => number): Behaviour =>
	(seen) => {
		const scores = [...trajectoriesOf(seen)].map(([id, text]) => {
			const messages = JSON.parse(text) as { role: string; content: string }[];
			const reply = messages.filter((m) => m.role === 'assistant').at(-1)?.content ?? '';
			return { trajectory_id: id, explanation: 'by rule', score: rule(reply) };
		});
		return ok(JSON.stringify({ scores }));
	};
/**
 * The opposite of the game's reward (1 - the share of a-m), so a run that trains on RULER's
 * scores is told apart from one that trains on the game's.
 */
const opposite = byRule((reply) => 1 - lettersReward(reply));
const judge = new ScriptedJudge(opposite);

beforeAll(async () => {
	root = await mkdtemp(join(tmpdir(), 'tabrl-run-loop-'));
	lettersBase = join(root, 'letters-base');
	ticTacToeBase = join(root, 'tictactoe-base');
	await writeModelFiles(lettersBase, makeFixture('llama', { seed: 11 }).files);
	await writeTicTacToeModel(ticTacToeBase, MODEL_SIZES.tiny);
	// each move one token, their embeddings scaled: a random model that answers with moves
	movesBase = join(root, 'tictactoe-moves-base');
	const moves = Array.from({ length: 9 }, (_, i) => `<move>${squareName(i)}</move>`);
	await writeTicTacToeModel(movesBase, {
		...MODEL_SIZES.tiny,
		splitTokens: moves,
		scaleTokens: { tokens: moves, by: 8 }
	});
	backend = new LocalBackend({ path: join(root, 'runs') });
	await judge.start();
}, 60_000);
afterAll(async () => {
	await judge.stop();
	await backend?.close();
	await rm(root, { recursive: true, force: true });
});

const PROJECT = 'run-loop';
const runDir = (name: string) => join(root, 'runs', PROJECT, 'models', name);

/** A small recipe on a tiny base: letters unless `environment` says otherwise. */
type RecipeOverrides = Partial<Omit<Recipe, 'grpo'>> & { grpo?: Partial<Recipe['grpo']> };

function recipe(over: RecipeOverrides = {}): Recipe {
	const environment = over.environment ?? 'letters';
	const base = preset(environment, '/');
	return {
		...base,
		...over,
		baseModel: over.baseModel ?? (environment === 'letters' ? lettersBase : ticTacToeBase),
		warmStart: null,
		grpo: {
			...base.grpo,
			autoSize: undefined, // fixed sizes unless a test asks for auto
			steps: 2,
			groups: 2,
			groupSize: 2,
			maxTokens: 4,
			tokenBudget: 4096,
			...over.grpo
		},
		lora: { rank: 4, alpha: 8 },
		eval: over.eval ?? { every: 0, games: 2, temperatures: [0] },
		maxContext: 512
	};
}

async function register(name: string, r: Recipe): Promise<TrainableModel> {
	const model = new TrainableModel({
		name,
		project: PROJECT,
		baseModel: r.baseModel,
		lora: r.lora,
		seed: r.seed,
		maxContext: r.maxContext,
		recipe: r
	});
	await model.register(backend);
	return model;
}

/**
 * Events as short tokens: 'p:rollouts@0', 'r@0' (repeats folded: 'r@0x4'), 's:train@1', ...
 * Group events (which interleave with the rollouts as groups complete) and the update's
 * progress events are checked apart.
 */
function trace(events: readonly RunEvent[]): string {
	const tokens = events
		.filter((e) => e.type !== 'group' && e.type !== 'progress')
		.map((e) => {
			if (e.type === 'phase') return `p:${e.phase}@${e.step}`;
			if (e.type === 'rollout') return `r@${e.step}`;
			if (e.type === 'step') return `s:${e.split}@${e.step}${e.skipped ? '!' : ''}`;
			if (e.type === 'eval') return `e@${e.report.step}`;
			if (e.type === 'sized') return `z${e.groups}@${e.step}`;
			return 'end';
		});
	const out: string[] = [];
	for (let i = 0; i < tokens.length;) {
		let j = i;
		while (j < tokens.length && tokens[j] === tokens[i]) j++;
		out.push(j - i > 1 ? `${tokens[i]}x${j - i}` : tokens[i]);
		i = j;
	}
	return out.join(' ');
}

/** A group game's judge fields (undefined when the game's own reward is trained on). */
const judgement = (game: { judgeScore?: number; explanation?: string }) => [
	game.judgeScore,
	game.explanation
];

describe('runRecipe', () => {
	it('letters: 2 steps end done, events in order, evaluations in history, checkpoints pruned', async () => {
		// 8 tokens at lr 1e-2: a 2-game group of the random model often scores alike (most
		// bytes are not a-m), so rounds are retried (up to maxNoSignal) until one has spread
		const r = recipe({
			eval: { every: 1, games: 2, temperatures: [0] },
			maxNoSignal: 8,
			grpo: { maxTokens: 8, learningRate: 1e-2 }
		});
		const model = await register('letters', r);
		const events: RunEvent[] = [];
		const summary = await runRecipe(model, r, { onEvent: (e) => events.push(e) });
		console.log(`letters: ${trace(events)}`);

		expect(summary.status).toBe('done');
		expect(summary.step).toBe(2);
		expect(summary.grpoStep).toBe(2);
		expect(events.at(-1)).toEqual({ type: 'end', summary });

		// eval before each step and at the end; a round with no spread is retried (step unchanged)
		const retry = (s: number) => `(?:p:rollouts@${s} r@${s}x4 p:train@${s} s:train@${s}! )*`;
		const round = (s: number) =>
			`p:eval@${s} e@${s} ${retry(s)}p:rollouts@${s} r@${s}x4 p:train@${s} s:train@${s + 1} `;
		expect(trace(events)).toMatch(new RegExp(`^${round(0)}${round(1)}p:eval@2 e@2 end$`));

		// the update's progress: micro-batches 1..N of each trained step, N its train/micro_batches
		const trainedSteps = events.filter((e) => e.type === 'step' && !e.skipped);
		for (const e of trainedSteps) {
			if (e.type !== 'step') continue;
			const progress = events.filter(
				(p) => p.type === 'progress' && p.phase === 'train' && p.step === e.step - 1
			);
			const total = e.metrics['train/micro_batches'];
			expect(total).toBeGreaterThanOrEqual(1);
			expect(progress.map((p) => (p.type === 'progress' ? [p.done, p.total] : []))).toEqual(
				Array.from({ length: total }, (_, i) => [i + 1, total])
			);
		}

		// rollout events carry their trajectory (ART's JSON), counted within the round
		const rollouts = events.filter((e) => e.type === 'rollout');
		for (const e of rollouts) {
			expect(e.total).toBe(4);
			expect(e.done).toBeGreaterThanOrEqual(1);
			expect(e.done).toBeLessThanOrEqual(4);
			expect(e.trajectory.reward).toBe(e.reward);
			expect(e.trajectory.messages_and_choices).toHaveLength(2);
			expect(e.trajectory.metadata.environment).toBe('letters');
		}
		// each group, once complete, says what GRPO trains on: its games' rewards (those of
		// their rollout events) and advantages (GRPO's, within the group)
		const groups = events.filter((e) => e.type === 'group');
		expect(groups).toHaveLength(rollouts.length / 2);
		for (const g of groups) {
			const played = rollouts.filter((r) => r.round === g.round && r.group === g.group);
			expect(played.every((r) => r.step === g.step)).toBe(true);
			expect(g.games.map((x) => x.index).sort()).toEqual([0, 1]);
			for (const x of g.games)
				expect(x.reward).toBe(played.find((r) => r.index === x.index)!.reward);
			const [a, b] = g.games;
			const spread = a.reward !== b.reward;
			// two games: +1 and -1 (std normalised) when they differ, 0 and 0 when alike
			expect(a.advantage).toBeCloseTo(spread ? Math.sign(a.reward - b.reward) : 0, 4);
			expect(a.advantage + b.advantage).toBeCloseTo(0, 10);
			expect(judgement(a)).toEqual([undefined, undefined]);
		}
		const steps = events.filter((e) => e.type === 'step');
		for (const e of steps) expect(e.metrics['train/reward']).toBeTypeOf('number');
		expect(summary.reward).toBe(steps.at(-1)!.metrics['train/reward']);
		const evals = events.filter((e) => e.type === 'eval');
		expect(evals.map((e) => e.report.step)).toEqual([0, 1, 2]);
		for (const e of evals) {
			expect(e.report.games).toBe(2);
			expect(e.report.temperature).toBe(0);
		}
		expect(summary.evalReward).toBe(evals.at(-1)!.report.reward);

		// history: val/reward logged at each evaluated step, equal to the reports
		const history = await model.history();
		const val = history.filter((h) => typeof h['val/reward'] === 'number');
		expect(val.map((h) => h.step)).toEqual([0, 1, 2]);
		expect(val.map((h) => h['val/reward'])).toEqual(evals.map((e) => e.report.reward));
		expect(history.filter((h) => typeof h['train/loss'] === 'number').map((h) => h.step)).toEqual([
			1, 2
		]);

		// checkpoints: pruned after each step to the latest and the best by val/reward then
		// known (ties: the earlier; the final evaluation comes after the last pruning)
		const score = new Map(val.map((h) => [h.step, h['val/reward'] as number]));
		const best = score.get(1)! > score.get(0)! ? 1 : 0;
		expect(await new NodeRunStore(runDir('letters')).listCheckpoints()).toEqual([best, 2]);

		// a finished run run again does nothing but end 'done' (its evaluations are logged)
		const again: RunEvent[] = [];
		const second = await runRecipe(model, r, { onEvent: (e) => again.push(e) });
		expect(second.status).toBe('done');
		expect(trace(again)).toBe('end');
		expect(await model.getStep()).toBe(2);

		// letters has no demonstrations: an SFT phase is refused before anything runs
		const sft = { games: 4, batchSize: 2, epochs: 1, learningRate: 1e-3, learningRateEnd: 1e-4 };
		const refused = await runRecipe(model, { ...r, sft: { ...sft, seed: 1, chunk: 1 } }).then(
			() => undefined,
			(e: { kind?: string }) => e
		);
		expect(refused?.kind).toBe('invalid-recipe');
		expect(await model.getStep()).toBe(2);
	}, 600_000);

	it('auto games per step: each step plays what the last step took sizes, and a resumed run goes on from its history', async () => {
		// bounds 1..3 from 2 groups of 4 (a group of 4 random letters replies mostly has a spread): SwiftShader's steps (seconds each) move the size; whichever
		// way they move it, each step must play nextGroups(the step before's groups, its seconds)
		const auto = { minGroups: 1, maxGroups: 3 };
		const r = recipe({
			maxNoSignal: 16,
			grpo: { groupSize: 4, maxTokens: 8, learningRate: 1e-2, autoSize: auto },
			eval: { every: 2, games: 20, temperatures: [0] }
		});
		const events: RunEvent[] = [];
		const model = await register('auto', r);
		expect((await runRecipe(model, r, { onEvent: (e) => events.push(e) })).status).toBe('done');
		await backend.unregister('auto');
		// resumed with one step more, by a new model over the same folder
		const more = { ...r, grpo: { ...r.grpo, steps: 3 } };
		const again = await register('auto', more);
		expect((await runRecipe(again, more, { onEvent: (e) => events.push(e) })).status).toBe('done');
		console.log(`auto: ${trace(events)}`);

		const trained = (await again.history()).filter((h) => typeof h['train/step_ms'] === 'number');
		expect(trained.map((h) => h.step)).toEqual([1, 2, 3]);
		const played = trained.map((h) => h[GROUPS_PLAYED] as number);
		expect(played[0]).toBe(2);
		for (let i = 1; i < trained.length; i++)
			expect(played[i]).toBe(nextGroups(played[i - 1], stepSeconds(trained[i - 1]), auto));
		// the rollouts of each trained round are that many groups of 4
		const rounds = new Map<number, number>();
		for (const e of events) if (e.type === 'rollout') rounds.set(e.round, e.total);
		const trainedRounds = events.filter((e) => e.type === 'step' && !e.skipped).length;
		expect(trainedRounds).toBe(3);
		expect(played.every((g) => [...rounds.values()].includes(g * 4))).toBe(true);
		// a 'sized' event before the first step and after each trained one, saying why
		const sized = events.filter((e) => e.type === 'sized');
		expect(sized.map((e) => e.step)).toEqual([0, 1, 2, 2, 3]);
		expect(sized[0].reason).toMatch(
			/^Games per step: auto, starting at 2 × 4 games \(aiming at 2–4 s a step/
		);
		for (const e of sized.slice(1))
			expect(e.reason).toMatch(/a step of \d × 4 games took \d+\.\d s/);
		// the first evaluation found its size (16 or 20 games here: a first batch of 16, then
		// the rest if there was time), recorded it, and every later one played as many
		const evals = events.filter((e) => e.type === 'eval').map((e) => e.report);
		expect(evals.map((e) => e.step)).toEqual([0, 2, 3]);
		expect([16, 20]).toContain(evals[0].games);
		for (const e of evals) expect(e.games).toBe(evals[0].games);
		const lines = (await again.history()).filter((h) => 'val/reward' in h);
		expect(lines.map((h) => h['val/games'])).toEqual([evals[0].games, undefined, undefined]);
	}, 600_000);

	it('an auto-sized run with its evaluation size given (eval.sized false) plays all of it every time', async () => {
		const r = recipe({
			maxNoSignal: 16,
			grpo: { steps: 1, groupSize: 2, maxTokens: 4, autoSize: { minGroups: 1, maxGroups: 2 } },
			eval: { every: 1, games: 20, temperatures: [0], sized: false }
		});
		const events: RunEvent[] = [];
		const model = await register('auto-eval-given', r);
		expect((await runRecipe(model, r, { onEvent: (e) => events.push(e) })).status).toBe('done');
		const history = await model.history();
		await backend.unregister('auto-eval-given');
		const evals = events.filter((e) => e.type === 'eval').map((e) => e.report);
		expect(evals.map((e) => [e.step, e.games])).toEqual([
			[0, 20],
			[1, 20]
		]);
		// nothing recorded as a found size: the recipe's count is the run's
		expect(history.some((h) => 'val/games' in h)).toBe(false);
	}, 600_000);

	it("eval.afterGames: an evaluation plays after the next step's games, before their update; the last at the end; its games counted", async () => {
		const r = recipe({
			maxNoSignal: 16,
			grpo: { steps: 1 },
			eval: { every: 1, games: 3, temperatures: [0], sized: false, afterGames: true }
		});
		const events: RunEvent[] = [];
		const model = await register('eval-after-games', r);
		expect((await runRecipe(model, r, { onEvent: (e) => events.push(e) })).status).toBe('done');
		const history = await model.history();
		await backend.unregister('eval-after-games');
		// step 0's evaluation after step 1's games (a retried round finds it done), step 1's at the end
		expect(trace(events)).toMatch(
			/^p:rollouts@0 r@0x4 p:eval@0 e@0 p:train@0 (?:s:train@0! p:rollouts@0 r@0x4 p:train@0 )*s:train@1 p:eval@1 e@1 end$/
		);
		// the same policy scored: logged at step 0, before the update's step 1
		expect(history.filter((h) => 'val/reward' in h).map((h) => h.step)).toEqual([0, 1]);
		for (const step of [0, 1])
			expect(
				events.flatMap((e) =>
					e.type === 'progress' && e.phase === 'eval' && e.step === step ? [[e.done, e.total]] : []
				)
			).toEqual([
				[0, 3],
				[1, 3],
				[2, 3],
				[3, 3]
			]);
	}, 600_000);

	it('grpo.scaleRewards false: each game is shown (and trained) with the advantage r - mean', async () => {
		const r = recipe({
			maxNoSignal: 16,
			grpo: { steps: 1, groupSize: 4, maxTokens: 8, learningRate: 1e-2, scaleRewards: false }
		});
		const events: RunEvent[] = [];
		const model = await register('unscaled', r);
		expect((await runRecipe(model, r, { onEvent: (e) => events.push(e) })).status).toBe('done');
		await backend.unregister('unscaled');
		const groups = events.flatMap((e) => (e.type === 'group' ? [e.games] : []));
		expect(groups.length).toBeGreaterThan(0);
		for (const games of groups) {
			const mean = games.reduce((s, g) => s + g.reward, 0) / games.length;
			for (const g of games) expect(g.advantage).toBeCloseTo(g.reward - mean, 12);
		}
		// a group that differs (letters' rewards are graded): scaled, its advantages' spread would be 1
		const spread = groups.find((games) => new Set(games.map((g) => g.reward)).size > 1);
		expect(spread).toBeDefined();
		const sd = Math.sqrt(spread!.reduce((s, g) => s + g.advantage ** 2, 0) / spread!.length);
		expect(Math.abs(sd - 1)).toBeGreaterThan(1e-3);
	}, 600_000);

	it('settings changed at a pause take effect from then on, each step recording what it trained with (a warm-up its share)', async () => {
		const r = recipe({
			maxNoSignal: 16,
			grpo: {
				steps: 2,
				groupSize: 4,
				maxTokens: 8,
				learningRate: 1e-2,
				klBeta: 0,
				temperature: 1,
				warmupSteps: 2
			}
		});
		const model = await register('letters-live', r);
		let live: LiveSettings | undefined;
		const summary = await runRecipe(model, r, {
			// at the update's pause of step 0, the visitor types new values
			pause: (phase, step) => {
				if (phase === 'update' && step === 0)
					live = { learningRate: 5e-3, klBeta: 0.05, temperature: 1.2 };
				return undefined;
			},
			live: () => live
		});
		expect(summary.status).toBe('done');
		const trained = (await model.history()).filter((h) => h['train/skipped'] !== 1);
		const rows = trained
			.filter((h) => typeof h['train/lr'] === 'number')
			.map((h) => [
				h.step,
				h['train/lr'],
				h[LR_WARMUP],
				h['train/kl_beta'],
				h['train/temperature']
			]);
		// step 1 (trained at step 0's pause): the new lr, half of it while it warms up, and KL;
		// its games were played at T 1 before the change; step 2 plays and trains at the new
		// temperature, at the whole new rate
		expect(rows).toEqual([
			[1, 2.5e-3, 0.5, 0.05, 1],
			[2, 5e-3, undefined, 0.05, 1.2]
		]);
		// a resume after step 1 goes on with the rate set, not the share it trained at
		expect(recordedSettings(trained.filter((h) => h.step === 1))).toMatchObject({
			learningRate: 5e-3
		});
		// a value out of range is refused by name
		await expect(
			runRecipe(await register('letters-live-bad', r), r, { live: () => ({ klBeta: -1 }) })
		).rejects.toThrow(/klBeta must be a number from 0 to 10/);
	}, 240_000);

	it('tic-tac-toe on a random model: no reward spread ends stuck after maxNoSignal rounds', async () => {
		const r = recipe({
			environment: 'tictactoe',
			maxNoSignal: 2,
			// 1 token cannot hold <move>..</move>: every game is illegal at its first turn
			grpo: { steps: 3, groups: 1, groupSize: 2, maxTokens: 1, klBeta: 0 }
		});
		const model = await register('stuck', r);
		const events: RunEvent[] = [];
		const summary = await runRecipe(model, r, { onEvent: (e) => events.push(e) });
		console.log(`stuck: ${trace(events)}`);
		expect(summary.status).toBe('stuck');
		expect(summary.reason).toContain('no reward spread in 2 rounds');
		// every game of the round alike: the reason says the score (it may be the best there is)
		expect(summary.reason).toContain('every game scored -1: the policy plays these games one way');
		expect(summary.step).toBe(0);
		expect(summary.grpoStep).toBe(0);
		expect(await model.getStep()).toBe(0);
		const skipped = 'p:rollouts@0 r@0x2 p:train@0 s:train@0!';
		expect(trace(events)).toBe(`${skipped} ${skipped} end`);
		const rollouts = events.filter((e) => e.type === 'rollout');
		for (const e of rollouts) {
			expect(e.trajectory.metadata.outcome).toBe('illegal');
			expect(e.reward).toBe(-1);
		}
		// each round plays new scenarios (other opponent seeds)
		const seeds = rollouts.map((e) => e.trajectory.metadata.seed);
		expect(new Set(seeds).size).toBe(4);
		expect(await new NodeRunStore(runDir('stuck')).listCheckpoints()).toEqual([0]);
	}, 600_000);

	it('Stop during rollouts ends stopped at once, the round untrained', async () => {
		const r = recipe({ grpo: { maxTokens: 48 } });
		const model = await register('stop', r);
		const abort = new AbortController();
		const events: RunEvent[] = [];
		let abortedAt = 0;
		let endedAt = 0;
		const summary = await runRecipe(model, r, {
			signal: abort.signal,
			onEvent: (e) => {
				events.push(e);
				if (e.type === 'phase' && e.phase === 'rollouts')
					setTimeout(() => {
						abortedAt = performance.now();
						abort.abort();
					}, 200);
				if (e.type === 'end') endedAt = performance.now();
			}
		});
		const ms = endedAt - abortedAt;
		console.log(`stop: ${trace(events)}; ended ${ms.toFixed(0)} ms after the abort`);
		expect(abortedAt).toBeGreaterThan(0);
		expect(summary.status).toBe('stopped');
		expect(summary.step).toBe(0);
		expect(ms).toBeLessThan(1000);
		expect(trace(events)).toBe('p:rollouts@0 end');
		// The games the stop cut short finish on the GPU (a train step waits for them); none
		// is reported after the end.
		await model.deleteCheckpoints();
		expect(trace(events)).toBe('p:rollouts@0 end');
		expect(await model.getStep()).toBe(0);
		expect(await model.history()).toEqual([]);
	}, 600_000);

	it('an SFT phase stopped after its first step resumes at that step, not at GRPO', async () => {
		const r = recipe({
			environment: 'tictactoe',
			sft: {
				games: 4,
				batchSize: 2,
				epochs: 1,
				learningRate: 1e-3,
				learningRateEnd: 1e-4,
				seed: 50,
				chunk: 1
			},
			grpo: { steps: 0 }
		});
		const abort = new AbortController();
		const first: RunEvent[] = [];
		const model = await register('sft', r);
		const stopped = await runRecipe(model, r, {
			signal: abort.signal,
			onEvent: (e) => {
				first.push(e);
				if (e.type === 'step') abort.abort();
			}
		});
		console.log(`sft, stopped: ${trace(first)}`);
		expect(stopped.status).toBe('stopped');
		expect(stopped.step).toBe(1);
		expect(stopped.grpoStep).toBe(0);
		expect(trace(first)).toBe('p:sft@0 s:sft@1 end');
		await backend.unregister('sft');

		// As after a restart: a new model, loaded from the run folder (its latest checkpoint).
		const again = await register('sft', r);
		expect(again.registration?.step).toBe(1);
		expect(again.registration?.checkpoints).toEqual([1]);
		const second: RunEvent[] = [];
		const resumed = await runRecipe(again, r, { onEvent: (e) => second.push(e) });
		console.log(`sft, resumed: ${trace(second)}`);
		expect(resumed.status).toBe('done');
		expect(resumed.step).toBe(2);
		expect(resumed.grpoStep).toBe(0);
		expect(trace(second)).toBe('p:sft@1 s:sft@2 end');
		const history = await again.history();
		expect(history.filter((h) => typeof h['sft/loss'] === 'number').map((h) => h.step)).toEqual([
			1, 2
		]);
		// the two steps trained at the decayed learning rates of steps 0 and 1
		const lrs = history.filter((h) => 'sft/lr' in h).map((h) => h['sft/lr'] as number);
		expect(lrs[0]).toBeCloseTo(1e-3, 8);
		expect(lrs[1]).toBeCloseTo(1e-4, 8);
		// checkpoints pruned after each SFT chunk: only the latest (nothing evaluated)
		expect(await new NodeRunStore(runDir('sft')).listCheckpoints()).toEqual([2]);
	}, 600_000);

	it("RULER: trained on the judge's scores, the game's reward beside them, evaluations the game's", async () => {
		judge.reset();
		const r = recipe({
			reward: { source: 'ruler', judge: { baseURL: judge.url, model: 'scripted' } },
			eval: { every: 2, games: 2, temperatures: [0] },
			grpo: { steps: 2, maxTokens: 8, learningRate: 1e-2 }
		});
		const model = await register('letters-ruler', r);
		const events: RunEvent[] = [];
		const summary = await runRecipe(model, r, { onEvent: (e) => events.push(e) });
		expect(summary.status).toBe('done');
		expect(summary.grpoStep).toBe(2);

		// one request per group of each round, ART's prompt, the strict schema
		const trained = events.filter((e) => e.type === 'step' && !e.skipped);
		expect(trained).toHaveLength(2);
		const rounds = events.filter((e) => e.type === 'phase' && e.phase === 'rollouts').length;
		expect(judge.seen).toHaveLength(rounds * r.grpo.groups);
		expect(judge.seen[0].body.messages[0]).toEqual({
			role: 'system',
			content: judgeSystemPrompt(DEFAULT_RUBRIC)
		});
		expect(judge.seen[0].body.response_format).toEqual(RESPONSE_FORMAT);
		// each group event carries the judge's score (the reward trained on) and explanation
		const judgedGames = events.flatMap((e) => (e.type === 'group' ? e.games : []));
		expect(judgedGames).toHaveLength(rounds * r.grpo.groups * r.grpo.groupSize);
		for (const game of judgedGames) expect(judgement(game)).toEqual([game.reward, 'by rule']);
		for (const e of trained) {
			if (e.type !== 'step') continue;
			const m = e.metrics;
			// the judge's score (1 - the game's reward) is the reward trained on
			expect(m['train/reward']).toBeCloseTo(m['train/ruler_score'], 10);
			expect(m['train/reward'] + m['train/independent_reward']).toBeCloseTo(1, 10);
			expect(m['train/ruler_dropped_groups']).toBe(0);
			expect(m['train/ruler_judge_reasks']).toBe(0);
			expect(m['train/ruler_judge_prompt_tokens']).toBe(100 * r.grpo.groups);
		}
		// evaluations play the game and score its own reward (no judge call)
		const evals = events.filter((e) => e.type === 'eval');
		expect(evals.map((e) => e.type === 'eval' && e.report.step)).toEqual([0, 2]);
		// the recipe saved with the run names the judge but holds no key
		const meta = await new NodeRunStore(runDir('letters-ruler')).readMeta();
		expect(JSON.stringify(meta)).toContain(judge.url);
	}, 600_000);

	it('RULER: a judge that answers garbage trains nothing and ends stuck, saying so', async () => {
		judge.reset(() => ok('Here are my scores: 1, 0.5'));
		const r = recipe({
			reward: { source: 'ruler', judge: { baseURL: judge.url, model: 'scripted' } },
			maxNoSignal: 2
		});
		const model = await register('letters-ruler-garbage', r);
		const events: RunEvent[] = [];
		const summary = await runRecipe(model, r, {
			judgeApiKey: 'sk-test-secret',
			onEvent: (e) => events.push(e)
		});
		expect(summary.status).toBe('stuck');
		expect(summary.reason).toMatch(/judge failed on every group in 2 rounds/);
		expect(summary.step).toBe(0);
		const steps = events.filter((e) => e.type === 'step');
		expect(steps.map((e) => e.type === 'step' && e.skipped)).toEqual([
			'judge-failed',
			'judge-failed'
		]);
		for (const e of steps)
			if (e.type === 'step') {
				expect(e.metrics['train/ruler_dropped_groups']).toBe(r.grpo.groups);
				// why, for the page to show mid-run: the judge's reply did not validate
				expect(e.judgeFailure).toMatch(/judge 'scripted'/);
			}
		// each group asked twice (the corrective re-ask), with the key as the bearer token only
		expect(judge.seen).toHaveLength(2 * r.grpo.groups * 2);
		expect(judge.seen[0].authorization).toBe('Bearer sk-test-secret');
		expect(JSON.stringify(events)).not.toContain('sk-test-secret');
	}, 600_000);

	it('RULER with a judge that reads how each tic-tac-toe game ended trains step for step as the game reward does', async () => {
		// The judge sees only ART's prompt: it reads each game's outcome from the game-over
		// message and scores (reward + 1) / 2. GRPO normalises rewards within each group, so
		// scores a + b x reward (b > 0) give the same advantages: the two runs must sample the
		// same games and make the same updates
		judge.reset(ticTacToeRule);
		const base = recipe({
			environment: 'tictactoe',
			baseModel: movesBase,
			grpo: { steps: 2, groups: 1, groupSize: 4, maxTokens: 1, learningRate: 2e-4 },
			maxNoSignal: 8
		});
		const judged: Recipe = {
			...base,
			reward: { source: 'ruler', judge: { baseURL: judge.url, model: 'scripted' } }
		};
		const runs = [];
		for (const [name, r] of [
			['tictactoe-env-twin', base],
			['tictactoe-ruler-twin', judged]
		] as const) {
			const model = await register(name, r);
			const summary = await runRecipe(model, r);
			expect(summary.status, `${name}: ${summary.reason}`).toBe('done');
			runs.push((await model.history()).filter((h) => typeof h['train/loss'] === 'number'));
		}
		const [env, ruler] = runs;
		expect(ruler.map((h) => h.step)).toEqual(env.map((h) => h.step));
		expect(env).toHaveLength(2); // the second step samples from the updated weights
		// games that ended differently: legal moves, losses and illegal moves (a reward spread)
		expect(env.some((h) => (h['train/num_moves'] as number) > 0)).toBe(true);
		for (let i = 0; i < env.length; i++) {
			// the game's reward of the games played, and what was learnt from them (the loss to
			// float rounding: the advantages are normalised from rescaled rewards, ~1e-5 apart)
			expect(ruler[i]['train/independent_reward']).toBeCloseTo(
				env[i]['train/reward'] as number,
				12
			);
			expect(ruler[i]['train/reward']).toBeCloseTo(
				((env[i]['train/reward'] as number) + 1) / 2,
				12
			);
			expect(ruler[i]['train/loss']).toBeCloseTo(env[i]['train/loss'] as number, 3);
		}
	}, 600_000);
});
