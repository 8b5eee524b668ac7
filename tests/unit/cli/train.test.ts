/**
 * `cli train`: the recipe its flags make (no GPU), then the command as a child process on
 * the tiny llama (SwiftShader): a letters run ends 'done' with its JSON line, history,
 * checkpoint and run.json, a second call continues it, npm's SIGTERM stops it ('stopped');
 * tic-tac-toe from a random model ends 'stuck' (exit 3); a foreign warm start is
 * 'warm-start-mismatch' (exit 1); bad flags exit 2 with the usage line.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeFixture } from '../../../src/lib/testing/fixtures';
import { writeModelFiles } from '../../../src/lib/model/hf/node/checkpoint';
import { DEFAULT_SFT, preset, presetOn, sftSteps, type Recipe } from '../../../src/lib/run';
import { CliInputError, UsageError } from '../../../scripts/cli/args';
import { EXIT_STUCK, parseTrainArgs } from '../../../scripts/cli/train-args';
import { savedRecipe, trainRecipe } from '../../../scripts/cli/train-recipe';
import { evalEnvOptions } from '../../../src/lib/run/evaluate';
import { checkSameRun } from '../../../src/lib/agent/backend/run-open';
import { runCli, usageText, type CliRun } from './run-cli';

const ROOT = join(import.meta.dirname, '../../..');

describe('cli train: the recipe from flags', () => {
	const recipe = (argv: string[], saved?: Recipe) =>
		trainRecipe(parseTrainArgs(['--out', 'runs/x', ...argv]), '/s', saved);

	it('defaults to the preset, with its shipped warm start on the bundled model only', () => {
		const ttt = recipe([]);
		expect(ttt).toEqual({
			...preset('tictactoe', '/s'),
			baseModel: '/s/models/tabrl-tiny',
			warmStart: { adapter: '/s/warm-starts/tabrl-tiny/tictactoe', mode: 'merged' }
		});
		expect(recipe(['--env', 'letters'])).toEqual({
			...preset('letters', '/s'),
			baseModel: '/s/models/tabrl-tiny'
		});
		// another model: a pretrained model's setup, no warm start unless asked for (then the
		// backend checks it)
		expect(recipe(['--model', '/m'])).toEqual(presetOn('tictactoe', '/m', '/s'));
		expect(recipe(['--model', '/m']).warmStart).toBeNull();
		expect(recipe(['--model', '/m', '--warm-start', 'preset']).warmStart).toEqual({
			adapter: '/s/warm-starts/tabrl-tiny/tictactoe',
			mode: 'merged'
		});
		expect(recipe(['--warm-start', 'none']).warmStart).toBeNull();
		expect(recipe(['--warm-start', '/w', '--warm-start-mode', 'stacked']).warmStart).toEqual({
			adapter: '/w',
			mode: 'stacked'
		});
		expect(recipe(['--env', 'letters', '--warm-start', 'tictactoe']).warmStart?.adapter).toBe(
			'/s/warm-starts/tabrl-tiny/tictactoe'
		);
	});

	it('replaces the fields of the flags given', () => {
		const r = recipe([
			'--env',
			'letters',
			'--model',
			'/m',
			'--steps',
			'7',
			'--groups',
			'3',
			'--group-size',
			'5',
			'--lr',
			'0.001',
			'--loss',
			'ppo',
			'--kl-beta',
			'0.1',
			'--temperature',
			'0.7',
			'--max-tokens',
			'9',
			'--seed=-4', // a negative value needs '=' (node's parseArgs)
			'--rank',
			'4',
			'--eval-every',
			'0',
			'--eval-games',
			'2',
			'--max-no-signal',
			'1'
		]);
		const p = presetOn('letters', '/m', '/s');
		expect(r).toEqual({
			...p,
			grpo: {
				...p.grpo,
				steps: 7,
				groups: 3,
				groupSize: 5,
				learningRate: 0.001,
				loss: 'ppo',
				klBeta: 0.1,
				temperature: 0.7,
				maxTokens: 9
			},
			lora: { rank: 4, alpha: 8 },
			seed: -4,
			eval: { ...p.eval, every: 0, games: 2, sized: false },
			maxNoSignal: 1
		});
		expect(recipe(['--alpha', '3']).lora).toEqual({ rank: 64, alpha: 3 });
	});

	it("--scale-rewards no: advantages r - mean (Dr. GRPO); yes or absent: ART's scaled ones", () => {
		expect(recipe(['--scale-rewards', 'no']).grpo.scaleRewards).toBe(false);
		expect(recipe(['--scale-rewards', 'yes']).grpo.scaleRewards).toBe(true);
		expect('scaleRewards' in recipe([]).grpo).toBe(false);
		expect(() => recipe(['--scale-rewards', 'off'])).toThrow(
			/--scale-rewards: 'off' is not yes or no/
		);
	});

	it("--token-budget N: padded tokens per micro-batch of the update; absent: the preset's", () => {
		expect(recipe(['--token-budget', '131072']).grpo.tokenBudget).toBe(131072);
		expect(recipe([]).grpo.tokenBudget).toBe(32768); // tic-tac-toe's preset
		expect(() => recipe(['--token-budget', '0'])).toThrow(/--token-budget/);
	});

	it("--warmup N: the learning rate warms up over N GRPO steps; absent: the preset's", () => {
		expect(recipe(['--warmup', '5']).grpo.warmupSteps).toBe(5);
		expect(recipe(['--warmup', '0']).grpo.warmupSteps).toBe(0);
		expect(recipe([]).grpo.warmupSteps).toBe(3); // tic-tac-toe's preset
		expect(() => recipe(['--warmup', '-1'])).toThrow(/--warmup/);
		expect(() => recipe(['--warmup', '1.5'])).toThrow(/--warmup/);
	});

	it('--iterations N, --mini-batches M: optimizer updates a step; absent: one, as ART', () => {
		const g = recipe(['--iterations', '2', '--mini-batches', '4']).grpo;
		expect([g.iterations, g.miniBatches]).toEqual([2, 4]);
		expect('iterations' in recipe([]).grpo || 'miniBatches' in recipe([]).grpo).toBe(false);
		expect(() => recipe(['--iterations', '0'])).toThrow(/--iterations/);
		expect(() => recipe(['--mini-batches', '65'])).toThrow(/--mini-batches/);
	});

	it('--sft-first N: N SFT steps of G demonstrations, for environments that have them', () => {
		const r = recipe(['--sft-first', '3', '--groups', '2']);
		expect(r.sft).toEqual({ ...DEFAULT_SFT, games: 6, batchSize: 2 });
		expect(sftSteps(r)).toBe(3);
		expect(recipe(['--sft-first', '0']).sft).toBeNull();
		expect(() => recipe(['--env', 'letters', '--sft-first', '2'])).toThrow(UsageError);
		expect(() => recipe(['--warm-start', 'none', '--warm-start-mode', 'merged'])).toThrow(
			/no warm start/
		);
	});

	it("a saved run's recipe is the starting point; another --env is refused", () => {
		const saved = recipe(['--env', 'letters', '--model', '/m', '--steps', '2', '--groups', '2']);
		expect(recipe(['--steps', '5'], saved)).toEqual({
			...saved,
			grpo: { ...saved.grpo, steps: 5 }
		});
		expect(() => recipe(['--env', 'tictactoe'], saved)).toThrow(CliInputError);
	});

	it("a run exported from the page and unzipped continues on this checkout's bundled model (run.json rewritten once)", async () => {
		const dir = await mkdtemp(join(tmpdir(), 'tabrl-moved-'));
		try {
			const page = preset('tictactoe', '/'); // the page's locations
			const meta = (recipe: Recipe, baseModel: string, warm: string) => ({
				name: 'ttt-1',
				project: 'tabrl-page',
				baseModel,
				warmStart: { adapter: warm, mode: 'merged' },
				recipe,
				step: 3,
				lastReward: 0.5,
				created: '2026-12-05T00:00:00.000Z',
				updated: '2026-12-05T00:00:00.000Z'
			});
			const site = 'http://127.0.0.1:4173';
			await writeFile(
				join(dir, 'run.json'),
				JSON.stringify(
					meta(page, `${site}/models/tabrl-tiny/`, `${site}/warm-starts/tabrl-tiny/tictactoe/`)
				)
			);
			const here = preset('tictactoe', '/s');
			expect(await savedRecipe(dir, '/s')).toEqual(here);
			const written = JSON.parse(await readFile(join(dir, 'run.json'), 'utf8'));
			expect(written).toMatchObject({
				baseModel: here.baseModel,
				warmStart: { adapter: here.warmStart!.adapter, mode: 'merged' },
				recipe: here,
				step: 3
			});
			expect(await savedRecipe(dir, '/s')).toEqual(here); // settled: nothing moves again
			// a model of its own (a Hugging Face URL) is left where it is
			const own = {
				...page,
				baseModel: 'https://huggingface.co/o/m/resolve/main/',
				warmStart: null
			};
			await writeFile(join(dir, 'run.json'), JSON.stringify(meta(own, own.baseModel, '')));
			expect(await savedRecipe(dir, '/s')).toEqual(own);
		} finally {
			await rm(dir, { recursive: true, force: true });
		}
	});

	it('a run cli train began here continues: its locations are not "moved" for a trailing slash', async () => {
		const dir = await mkdtemp(join(tmpdir(), 'tabrl-continue-'));
		try {
			// as a fresh `cli train --env tictactoe --warm-start preset` saves it: resolved, no slash
			const first = recipe(['--warm-start', 'preset']);
			const meta = {
				name: 'tl',
				project: 'tabrl-cli',
				baseModel: first.baseModel,
				warmStart: first.warmStart!,
				recipe: first,
				step: 140,
				lastReward: 0.8,
				created: '2026-12-06T00:00:00.000Z',
				updated: '2026-12-06T00:00:00.000Z'
			};
			await writeFile(join(dir, 'run.json'), JSON.stringify(meta));
			const saved = await savedRecipe(dir, '/s');
			expect(saved).toEqual(first);
			expect(JSON.parse(await readFile(join(dir, 'run.json'), 'utf8'))).toEqual(meta);
			const again = recipe(['--warm-start', 'preset'], saved);
			const spec = {
				name: 'tl',
				project: 'tabrl-cli',
				baseModel: again.baseModel,
				warmStart: again.warmStart!
			};
			expect(() => checkSameRun(meta, spec)).not.toThrow();
			// the same folders written with a slash are the same run; another folder is not
			const slashed = { ...meta, baseModel: `${meta.baseModel}/` };
			expect(() => checkSameRun(slashed, spec)).not.toThrow();
			expect(() => checkSameRun(meta, { ...spec, baseModel: '/s/models/other' })).toThrow(
				/already exists/
			);
		} finally {
			await rm(dir, { recursive: true, force: true });
		}
	});

	it('a continued run goes on with the live settings its last step recorded; flags still win', async () => {
		const dir = await mkdtemp(join(tmpdir(), 'tabrl-live-'));
		try {
			const first = recipe([]);
			const meta = {
				name: 'r',
				project: 'tabrl-page',
				baseModel: first.baseModel,
				warmStart: first.warmStart!,
				recipe: first,
				step: 2,
				lastReward: 0.5,
				created: '2026-12-06T00:00:00.000Z',
				updated: '2026-12-06T00:00:00.000Z'
			};
			await writeFile(join(dir, 'run.json'), JSON.stringify(meta));
			// step 1 as the recipe said; step 2 after the page's pause changed all three
			const line = (step: number, lr: number, kl: number, t: number) =>
				JSON.stringify({ step, 'train/lr': lr, 'train/kl_beta': kl, 'train/temperature': t });
			await writeFile(
				join(dir, 'history.jsonl'),
				`${line(1, first.grpo.learningRate, first.grpo.klBeta, 1)}\n${line(2, 1e-4, 0, 0.7)}\n`
			);
			const saved = await savedRecipe(dir, '/s');
			expect(saved!.grpo).toMatchObject({ learningRate: 1e-4, klBeta: 0, temperature: 0.7 });
			expect(recipe(['--lr', '3e-4'], saved).grpo).toMatchObject({
				learningRate: 3e-4,
				klBeta: 0,
				temperature: 0.7
			});
			// run.json keeps the recipe as given
			expect(JSON.parse(await readFile(join(dir, 'run.json'), 'utf8')).recipe).toEqual(first);
		} finally {
			await rm(dir, { recursive: true, force: true });
		}
	});

	it('--reward ruler names the judge (URL, model, rubric), never its key', () => {
		const judge = ['--judge-base-url', 'http://127.0.0.1:9/v1', '--judge-model', 'j'];
		const r = recipe(['--env', 'letters', '--reward', 'ruler+env', ...judge]);
		expect(r.reward).toEqual({
			source: 'ruler+env',
			judge: { baseURL: 'http://127.0.0.1:9/v1', model: 'j' }
		});
		// the judge's flags alone mean RULER; a saved run keeps its judge unless a flag changes it
		expect(recipe(['--env', 'letters', ...judge]).reward?.source).toBe('ruler');
		const saved = recipe(['--env', 'letters', '--reward', 'ruler', ...judge]);
		expect(recipe(['--judge-model', 'k'], saved).reward).toEqual({
			source: 'ruler',
			judge: { baseURL: 'http://127.0.0.1:9/v1', model: 'k' }
		});
		expect(recipe(['--reward', 'env'], saved).reward).toEqual({ source: 'env' });
		expect(recipe(['--env', 'letters']).reward).toBeUndefined();
		expect(() => recipe(['--reward', 'ruler'])).toThrow(
			/needs --judge-base-url URL and --judge-model/
		);
		expect(() => recipe(['--reward', 'env', '--judge-model', 'j'])).toThrow(UsageError);
		expect(() => recipe(['--reward', 'judge'])).toThrow(
			/--reward: 'judge' is not env or ruler or ruler\+env/
		);
		expect(() =>
			recipe(['--reward', 'ruler', '--judge-base-url', 'ftp://x', '--judge-model', 'j'])
		).toThrow(/reward\.judge\.baseURL must be an http\(s\) URL/);
		// 2048's history window records each turn apart: RULER judges one conversation
		expect(() => recipe(['--env', '2048', ...judge])).toThrow(/envOptions\.historyTurns/);
	});
});

let root: string;
let llama: string;
beforeAll(async () => {
	root = await mkdtemp(join(tmpdir(), 'tabrl-cli-train-'));
	llama = join(root, 'llama');
	await writeModelFiles(llama, makeFixture('llama', { seed: 5 }).files);
});
afterAll(() => rm(root, { recursive: true, force: true }));

/** `train` with small sizes, `over` replacing or adding flags (values as typed). */
function trainArgs(over: Record<string, string>): string[] {
	const flags = {
		env: 'letters',
		model: llama,
		steps: '2',
		groups: '2',
		'group-size': '2',
		'eval-every': '0',
		// (a model other than the bundled one gets a pretrained model's longer replies)
		'max-tokens': '4',
		out: join(root, 'run'),
		...over
	};
	return ['train', ...Object.entries(flags).flatMap(([k, v]) => [`--${k}`, v])];
}

interface TrainJson {
	step: number;
	grpo_step: number;
	status: string;
	reason: string;
	reward: number | null;
	eval_reward: number | null;
	out: string;
}

/** stdout: exactly one JSON line of the documented shape. */
function parseResult(r: CliRun): TrainJson {
	const lines = r.stdout.trim().split('\n');
	expect(lines, r.stderr).toHaveLength(1);
	const out = JSON.parse(lines[0]) as TrainJson;
	expect(Object.keys(out).sort()).toEqual(
		['eval_reward', 'grpo_step', 'out', 'reason', 'reward', 'status', 'step'].sort()
	);
	return out;
}

const readHistory = async (out: string) =>
	(await readFile(join(out, 'history.jsonl'), 'utf8'))
		.trim()
		.split('\n')
		.map((l) => JSON.parse(l) as Record<string, number>);

describe('cli train: runs', () => {
	const letters = () => join(root, 'letters');

	it('a letters run of 2 steps: done, exit 0, history, a PEFT checkpoint and run.json', async () => {
		const out = letters();
		const r = await runCli(trainArgs({ out, seed: '3', rank: '4' }), 300_000);
		expect(r.code, r.stderr).toBe(0);
		expect(parseResult(r)).toMatchObject({
			step: 2,
			grpo_step: 2,
			status: 'done',
			eval_reward: null,
			out
		});
		expect(r.stderr).toMatch(/^step 2 \(grpo 2\/2\): reward \d\.\d{3} ± \d\.\d{3}, loss /m);
		expect(r.stderr).toMatch(/^done: reached GRPO step 2$/m);
		const trained = (await readHistory(out)).filter((h) => h['train/skipped'] === undefined);
		expect(trained.map((h) => h.step)).toEqual([1, 2]);
		for (const h of trained) expect(Number.isFinite(h['train/loss'])).toBe(true);
		// the latest checkpoint is kept (and the best by val/reward: none here)
		expect(await readdir(join(out, 'checkpoints'))).toEqual(['0002']);
		// the writer's lock is given back at exit
		expect(await readdir(out)).not.toContain('run.lock');
		const config = JSON.parse(
			await readFile(join(out, 'checkpoints', '0002', 'adapter_config.json'), 'utf8')
		);
		expect(config).toMatchObject({ peft_type: 'LORA', r: 4, lora_alpha: 8 });
		const meta = JSON.parse(await readFile(join(out, 'run.json'), 'utf8'));
		expect(meta).toMatchObject({ name: 'letters', project: 'cli', baseModel: llama, step: 2 });
		expect(meta.recipe).toMatchObject({
			environment: 'letters',
			warmStart: null,
			seed: 3,
			lora: { rank: 4, alpha: 8 },
			grpo: { steps: 2, groups: 2, groupSize: 2 }
		});
	}, 300_000);

	it('a second call with the same --out continues from the saved step and recipe; SIGTERM to the npm that started it stops it cleanly (stopped, its steps kept)', async () => {
		const out = letters();
		// only --out and --steps: the environment, model, sizes and seed come from run.json.
		// Through `npm run`, as a process manager starts it: npm does not pass SIGTERM on, the
		// trainer sees its launcher end (scripts/cli/launcher.ts)
		const child = spawn('npm', ['run', '-s', 'cli', '--', 'train', '--out', out, '--steps', '50'], {
			cwd: ROOT,
			stdio: ['ignore', 'pipe', 'pipe']
		});
		let stdout = '';
		let stderr = '';
		let killed = false;
		child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
		child.stderr.on('data', (d: Buffer) => {
			stderr += d.toString();
			// stop once a step of this call has trained
			if (!killed && /^step \d+ \(grpo \d+\/50\): .*loss/m.test(stderr)) {
				killed = true;
				child.kill('SIGTERM');
			}
		});
		// npm ends at once; the trainer writes to the same pipes until it ends too
		await new Promise<void>((resolve) => child.stderr.on('close', resolve));
		expect(killed, stderr).toBe(true);
		const result = parseResult({ code: 0, stdout, stderr });
		expect(result.status).toBe('stopped');
		expect(result.step).toBeGreaterThanOrEqual(3);
		expect(result.step).toBeLessThan(50);
		expect(stderr).toMatch(/continuing at step 2/);
		expect(stderr).not.toMatch(/^step [12] /m);
		expect(stderr).toMatch(
			new RegExp(
				`^npm, which started this run, ended \\(process \\d+ of its chain\\): stopping after this step; the run is saved in ${out}`,
				'm'
			)
		);
		const trained = (await readHistory(out)).filter((h) => h['train/skipped'] === undefined);
		expect(trained.map((h) => h.step)).toEqual(
			Array.from({ length: result.step }, (_, i) => i + 1)
		);
		expect(await readdir(join(out, 'checkpoints'))).toContain(String(result.step).padStart(4, '0'));
		const meta = JSON.parse(await readFile(join(out, 'run.json'), 'utf8'));
		expect(meta).toMatchObject({ step: result.step, recipe: { seed: 3, grpo: { steps: 50 } } });
	}, 300_000);

	it('a checkpoint whose bytes changed is never trained on: with no intact one left, checkpoint-corrupt naming the file, nothing moved', async () => {
		const out = letters();
		const meta = JSON.parse(await readFile(join(out, 'run.json'), 'utf8'));
		const latest = String(meta.step).padStart(4, '0');
		// pruned to the latest alone (no evaluations): flip 64 bytes of its adapter
		expect(await readdir(join(out, 'checkpoints'))).toEqual([latest]);
		const file = join(out, 'checkpoints', latest, 'adapter_model.safetensors');
		const b = new Uint8Array(await readFile(file));
		for (let i = 200; i < 264; i++) b[i] ^= 0xff;
		await writeFile(file, b);
		const r = await runCli(['train', '--out', out, '--steps', String(meta.step + 1)], 300_000);
		expect(r.code, r.stderr).toBe(1);
		expect(r.stderr).toMatch(
			new RegExp(
				`^tabrl: checkpoint-corrupt: Checkpoint .*checkpoints/${latest}/adapter_model\\.safetensors: its sha256 is [0-9a-f]{16}…, [0-9a-f]{16}… was saved`,
				'm'
			)
		);
		expect(await readdir(join(out, 'checkpoints'))).toEqual([latest]);
		expect(JSON.parse(await readFile(join(out, 'run.json'), 'utf8')).step).toBe(meta.step);
	}, 300_000);

	it('tic-tac-toe from a random model with no warm start: no reward spread, stuck, exit 3', async () => {
		const out = join(root, 'stuck');
		const r = await runCli(
			trainArgs({
				out,
				env: 'tictactoe',
				'warm-start': 'none',
				steps: '1',
				groups: '1',
				'max-tokens': '4',
				'max-no-signal': '1'
			}),
			300_000
		);
		expect(r.code, r.stderr).toBe(EXIT_STUCK);
		const result = parseResult(r);
		expect(result).toMatchObject({ step: 0, grpo_step: 0, status: 'stuck' });
		expect(result.reason).toMatch(/no reward spread/);
		expect(r.stderr).toMatch(/no reward spread: not trained/);
		const history = await readHistory(out);
		expect(history).toHaveLength(1);
		expect(history[0]).toMatchObject({ step: 0, 'train/skipped': 1, 'train/reward_std_dev': 0 });
	}, 300_000);

	it('a warm start made for another base is refused: warm-start-mismatch, exit 1', async () => {
		// PEFT's two files with a manifest naming another base's tensors (the adapter's own
		// hash right, so the base is what is refused: checked before the files are read).
		const dir = join(root, 'foreign-warm-start');
		await mkdir(dir, { recursive: true });
		const adapter = new TextEncoder().encode('an adapter for another model');
		await writeFile(join(dir, 'adapter_model.safetensors'), adapter);
		await writeFile(join(dir, 'adapter_config.json'), '{"peft_type": "LORA"}');
		await writeFile(
			join(dir, 'warm-start.json'),
			JSON.stringify({
				format: 'tabrl-warm-start/1',
				environment: 'letters',
				base: { name: 'another-model', tensorsSha256: '0'.repeat(64) },
				adapterSha256: createHash('sha256').update(adapter).digest('hex'),
				command: 'a test',
				seed: 1,
				made: '2026-01-01'
			})
		);
		const r = await runCli(
			trainArgs({ out: join(root, 'foreign'), 'warm-start': dir, steps: '1' }),
			120_000
		);
		expect(r.code, r.stderr).toBe(1);
		expect(r.stdout).toBe('');
		expect(r.stderr).toMatch(/^tabrl: warm-start-mismatch: .*made for another-model/m);
		// a warm start folder that is not there is refused before the GPU is used
		const missing = await runCli(
			trainArgs({ out: join(root, 'missing'), 'warm-start': join(root, 'nope') }),
			60_000
		);
		expect(missing.code).toBe(1);
		expect(missing.stderr).toMatch(/^tabrl: input: --warm-start: .*nope is not a directory/m);
		// so is a judge whose key variable is not set (the key is never a flag)
		const keyless = await runCli(
			trainArgs({
				out: join(root, 'keyless'),
				reward: 'ruler',
				'judge-base-url': 'http://127.0.0.1:9/v1',
				'judge-model': 'j',
				'judge-api-key-env': 'TABRL_TEST_UNSET_KEY'
			}),
			60_000
		);
		expect(keyless.code).toBe(1);
		expect(keyless.stderr).toMatch(
			/^tabrl: input: --judge-api-key-env: the environment variable TABRL_TEST_UNSET_KEY is not set/m
		);
		// --gpu-memory reaches the model: a budget below its weights is refused as it loads
		const small = await runCli(
			trainArgs({ out: join(root, 'small-gpu'), 'gpu-memory': '0.0001' }),
			120_000
		);
		expect(small.code, small.stderr).toBe(1);
		expect(small.stderr).toMatch(/of GPU memory, over the budget of 107374 B/);
	}, 300_000);

	it("--changes gives the inbox its share of changed emails, the preset's other options kept", () => {
		const recipe = trainRecipe(
			parseTrainArgs(['--out', join(root, 'x'), '--env', 'inbox', '--changes', '0.5'])
		);
		expect(recipe.envOptions).toEqual({ ...preset('inbox').envOptions, changes: 0.5 });
		expect(
			trainRecipe(parseTrainArgs(['--out', join(root, 'x'), '--env', 'inbox'])).envOptions
		).toEqual(preset('inbox').envOptions);
	});

	it('--opponent sets whom tic-tac-toe trains against; its evaluations stay against the random one', () => {
		const recipe = trainRecipe(
			parseTrainArgs(['--out', join(root, 'x'), '--env', 'tictactoe', '--opponent', 'mixed'])
		);
		expect(recipe.envOptions).toEqual({ opponent: 'mixed' });
		expect(recipe.eval.envOptions).toEqual({ opponent: 'random' });
		expect(evalEnvOptions(recipe)).toEqual({ opponent: 'random' });
		const plain = trainRecipe(parseTrainArgs(['--out', join(root, 'x'), '--env', 'tictactoe']));
		expect(plain.envOptions).toBeUndefined();
		expect(plain.eval.envOptions).toBeUndefined();
	});

	it("--on-invalid-reply random-move: 2048's games play on; its evaluations keep ART's rule", () => {
		const recipe = trainRecipe(
			parseTrainArgs([
				'--out',
				join(root, 'x'),
				'--env',
				'2048',
				'--on-invalid-reply',
				'random-move'
			])
		);
		expect(recipe.envOptions).toEqual({
			...preset('2048').envOptions,
			onInvalidReply: 'random-move'
		});
		expect(evalEnvOptions(recipe)).toEqual({ ...preset('2048').envOptions, onInvalidReply: 'end' });
	});

	it('refuses bad flags with the usage line, exit 2', async () => {
		const cases: [string[], RegExp][] = [
			[trainArgs({ env: 'chess' }), /--env: 'chess' is not an environment/],
			[trainArgs({ 'sft-first': '2' }), /--sft-first: letters has no demonstrations/],
			[trainArgs({ 'group-size': '1' }), /--group-size: '1' is not an integer >= 2/],
			[trainArgs({ loss: 'sgd' }), /--loss: 'sgd' is not cispo or ppo/],
			[['train', '--steps', '1'], /--out is required/],
			[trainArgs({ reward: 'ruler' }), /--reward ruler needs --judge-base-url/],
			[[...trainArgs({}), '--bogus', '1'], /Unknown option '--bogus'/],
			[trainArgs({ env: 'inbox', changes: '2' }), /--changes: '2' is not a share from 0 to 1/],
			[trainArgs({ changes: '0.5' }), /--changes: only for --env inbox, not letters/],
			[trainArgs({ opponent: 'perfect' }), /--opponent: only for --env tictactoe, not letters/],
			[
				trainArgs({ env: 'tictactoe', opponent: 'minimax' }),
				/--opponent: 'minimax' is not random or perfect or mixed/
			],
			[
				trainArgs({ env: 'inbox', 'on-invalid-reply': 'random-move' }),
				/--on-invalid-reply: random-move only for --env tictactoe or 2048, not inbox/
			],
			[
				trainArgs({ env: 'tictactoe', 'on-invalid-reply': 'retry' }),
				/--on-invalid-reply: 'retry' is not end or random-move/
			],
			[trainArgs({ 'gpu-memory': '0' }), /--gpu-memory: '0' is not a positive number of GiB/]
		];
		const usage = /usage: npm run -s cli -- train --out DIR/;
		// one through the CLI (exit 2, the message and the usage line on stderr, nothing on stdout)
		const r = await runCli(cases[0][0], 60_000);
		expect(r.code, r.stderr).toBe(2);
		expect(r.stdout).toBe('');
		expect(r.stderr).toMatch(cases[0][1]);
		expect(r.stderr).toMatch(usage);
		// the rest from the parser and the recipe it makes (flags that do not fit together)
		for (const [args, message] of cases.slice(1)) {
			const text = usageText((argv) => trainRecipe(parseTrainArgs(argv)), args.slice(1));
			expect(text, args.join(' ')).toMatch(message);
			expect(text).toMatch(usage);
		}
	}, 300_000);
});
