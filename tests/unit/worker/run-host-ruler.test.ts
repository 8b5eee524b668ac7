/**
 * The worker's runs side with RULER (a scripted judge on loopback, the key handed apart from
 * the recipe, as the page does): the run trains on the judge's scores; the key reaches the
 * judge only as the bearer token and is nowhere else (events, store, listing, export); a
 * recipe carrying a key is refused unechoed; an absent judge fails before the model loads;
 * a judge echoing the key has it masked.
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalBackend } from '../../../src/lib/agent/backend/node/backend';
import { lettersReward } from '../../../src/lib/agent/envs/letters/rules';
import { unpackRunArchive } from '../../../src/lib/grpo/store/run-archive';
import { writeModelFiles } from '../../../src/lib/model/hf/node/checkpoint';
import { preset, type Recipe, type RunEvent } from '../../../src/lib/run';
import { makeFixture } from '../../../src/lib/testing/fixtures';
import { ok, ScriptedJudge, trajectoriesOf } from '../../../src/lib/testing/scripted-judge';
import type { RunHost } from '../../../src/lib/worker/run-host';
import { nodeRunHost } from './node-run-host';
import { failure } from '../../helpers/failure';

const KEY = 'sk-tabrl-test-9f8e7d6c5b4a';

let root: string;
let runs: string;
let baseModel: string;
let backend: LocalBackend;
let host: RunHost;

/** Scores each letters reply by the game's rule (the share of its letters in a-m). */
const judge = new ScriptedJudge((seen) => {
	const scores = [...trajectoriesOf(seen)].map(([id, text]) => {
		const messages = JSON.parse(text) as { role: string; content: string }[];
		const reply = messages.filter((m) => m.role === 'assistant').at(-1)?.content ?? '';
		return { trajectory_id: id, explanation: 'by rule', score: lettersReward(reply) };
	});
	return ok(JSON.stringify({ scores }));
});

beforeAll(async () => {
	root = await mkdtemp(join(tmpdir(), 'tabrl-run-host-ruler-'));
	runs = join(root, 'runs');
	baseModel = join(root, 'base');
	await writeModelFiles(baseModel, makeFixture('llama', { seed: 11 }).files);
	await judge.start();
	backend = new LocalBackend({ runDir: (spec) => join(runs, spec.name) });
	host = nodeRunHost(backend, runs, 'host-ruler-test');
}, 60_000);
afterAll(async () => {
	await judge.stop();
	await backend?.close();
	await rm(root, { recursive: true, force: true });
});

/** Letters judged by RULER: one GRPO step of 2 x 2 games of up to 8 tokens. */
function rulerLetters(baseURL = judge.url): Recipe {
	const base = preset('letters', '/');
	return {
		...base,
		baseModel,
		reward: { source: 'ruler', judge: { baseURL, model: 'scripted' } },
		grpo: {
			...base.grpo,
			steps: 1,
			groups: 2,
			groupSize: 2,
			maxTokens: 8,
			learningRate: 1e-2,
			tokenBudget: 4096
		},
		lora: { rank: 4, alpha: 8 },
		eval: { every: 0, games: 2, temperatures: [0] },
		maxNoSignal: 8,
		maxContext: 256
	};
}

/** Every file under `dir`, recursively, with its bytes. */
async function filesUnder(dir: string): Promise<Map<string, Buffer>> {
	const out = new Map<string, Buffer>();
	for (const entry of await readdir(dir, { withFileTypes: true, recursive: true }))
		if (entry.isFile()) {
			const path = join(entry.parentPath, entry.name);
			out.set(path, await readFile(path));
		}
	return out;
}

describe('createRunHost with RULER: the judge API key', () => {
	it('reaches the judge as the bearer token and nothing else: events, store, listing, export', async () => {
		judge.reset();
		const recipe = rulerLetters();
		const events: RunEvent[] = [];
		const summary = await host.startRun('ruler-1', recipe, (e) => events.push(e), {
			judgeApiKey: ` ${KEY}\n` // (pasted with whitespace: trimmed)
		});
		expect(summary.status, summary.reason).toBe('done');
		expect(summary.step).toBe(1);

		// the judge: asked for its models first, then once per group of each round
		expect(judge.modelRequests).toEqual([{ authorization: `Bearer ${KEY}` }]);
		const rounds = events.filter((e) => e.type === 'phase' && e.phase === 'rollouts').length;
		expect(judge.seen).toHaveLength(rounds * 2);
		for (const seen of judge.seen) {
			expect(seen.authorization).toBe(`Bearer ${KEY}`);
			expect(JSON.stringify(seen.body)).not.toContain(KEY);
		}
		const trained = events.filter((e) => e.type === 'step' && !e.skipped);
		expect(trained).toHaveLength(1);
		const m = trained[0].type === 'step' ? trained[0].metrics : {};
		expect(m['train/reward']).toBeCloseTo(m['train/ruler_score'], 10); // (the judge's rule is the game's)
		expect(m['train/ruler_score']).toBeCloseTo(m['train/independent_reward'], 10);
		expect(m['train/ruler_dropped_groups']).toBe(0);

		// nowhere else
		expect(JSON.stringify(events)).not.toContain(KEY);
		expect(JSON.stringify(summary)).not.toContain(KEY);
		const files = await filesUnder(join(runs, 'ruler-1'));
		expect(files.size).toBeGreaterThan(2); // summary, history, a checkpoint's files
		for (const [path, bytes] of files) expect(bytes.includes(KEY), path).toBe(false);
		const [meta] = await host.listRuns();
		expect(JSON.stringify(meta)).not.toContain(KEY);
		expect((meta.recipe as Recipe).reward).toEqual({
			source: 'ruler',
			judge: { baseURL: judge.url, model: 'scripted' }
		});
		expect(JSON.stringify(await host.runHistory('ruler-1'))).not.toContain(KEY);
		const exported = unpackRunArchive(await host.exportRun('ruler-1'));
		expect(JSON.stringify([exported.meta, exported.history])).not.toContain(KEY);
		for (const [step, files] of exported.checkpoints)
			for (const [name, bytes] of files)
				expect(Buffer.from(bytes).includes(KEY), `${step}/${name}`).toBe(false);
	}, 600_000);

	it('a recipe holding a key is refused before anything is written, without echoing it', async () => {
		judge.reset();
		const recipe = rulerLetters();
		const leaky = {
			...recipe,
			reward: { ...recipe.reward!, judge: { ...recipe.reward!.judge!, apiKey: KEY } }
		} as Recipe;
		const error = await failure(host.startRun('leaky', leaky, undefined, { judgeApiKey: KEY }));
		expect(error.kind).toBe('invalid-recipe');
		expect(error.message).toMatch(/reward\.judge holds 'apiKey'.*judgeApiKey/);
		expect(error.message).not.toContain(KEY);
		expect(judge.modelRequests).toHaveLength(0);
		expect(await filesUnder(runs).then((f) => [...f.keys()].some((p) => p.includes('leaky')))).toBe(
			false
		);
	});

	it('a judge with nothing listening: a typed error at once, before the model loads', async () => {
		const events: RunEvent[] = [];
		const t0 = performance.now();
		const error = await failure(
			host.startRun('unreachable', rulerLetters('http://127.0.0.1:9/v1'), (e) => events.push(e), {
				judgeApiKey: KEY
			})
		);
		expect(performance.now() - t0).toBeLessThan(15_000);
		expect(error.kind).toBe('ruler-judge-request');
		expect(error.message).toMatch(
			/judge 'scripted' at http:\/\/127\.0\.0\.1:9\/v1 could not be reached/
		);
		expect(error.message).not.toContain(KEY);
		expect(events).toEqual([{ type: 'phase', phase: 'loading', step: 0 }]);
		expect(host.active).toBeNull();
		expect((await host.listRuns()).map((r) => r.name)).toEqual(['ruler-1']);
	});

	it('a judge that echoes the key in its refusal: the error has it masked', async () => {
		judge.reset();
		judge.modelsAnswer = {
			status: 401,
			json: { error: { message: `Incorrect API key provided: ${KEY}.` } }
		};
		const error = await failure(
			host.startRun('refused', rulerLetters(), undefined, { judgeApiKey: KEY })
		);
		expect(error.kind).toBe('ruler-judge-request');
		expect(error.message).toMatch(/HTTP 401.*\[the judge API key\].*Check the API key/);
		expect(error.message).not.toContain(KEY);
		expect(judge.seen).toHaveLength(0);
	});
});
