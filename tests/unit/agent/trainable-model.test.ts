/**
 * TrainableModel over the Node LocalBackend, end to end on a tiny random Llama in real
 * Hugging Face layout (fixtures.ts), on Dawn (SwiftShader here): ART's README loop written
 * in TypeScript runs as written; every step leaves a checkpoint and a history line; a new
 * backend resumes where the last one stopped with the same weights; deleteCheckpoints keeps
 * the latest and the best; SFT lowers the loss of what it trains on; bad input is refused
 * with typed errors and leaves the saved run alone.
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatherTrajectoryGroups, Trajectory, TrainableModel } from '../../../src/lib/agent';
import { LocalBackend } from '../../../src/lib/agent/backend/node/backend';
import { makeFixture } from '../../../src/lib/testing/fixtures';
import { writeModelFiles } from '../../../src/lib/model/hf/node/checkpoint';

let root: string;
let baseModel: string;

beforeAll(async () => {
	root = await mkdtemp(join(tmpdir(), 'tabrl-trainable-'));
	baseModel = join(root, 'base');
	await writeModelFiles(baseModel, makeFixture('llama', { seed: 5 }).files);
});
afterAll(async () => {
	await rm(root, { recursive: true, force: true });
});

/** A toy scenario: the reward is the share of the letter `letter` in the reply. */
async function rollout(client: OpenAI, model: TrainableModel, letter: string, seed: number) {
	const messages = [{ role: 'user' as const, content: `Say something with many ${letter}s.` }];
	const completion = await client.chat.completions.create({
		model: model.name,
		messages,
		max_tokens: 6,
		seed
	});
	const choice = completion.choices[0];
	const text = choice.message.content ?? '';
	const reward = text.length ? [...text].filter((c) => c === letter).length / text.length : 0;
	return new Trajectory({ messagesAndChoices: [...messages, choice], reward });
}

describe('TrainableModel with the Node LocalBackend', () => {
	it('unregister waits for a generation in flight, then refuses new requests', async () => {
		const backend = new LocalBackend({ path: join(root, 'runs-release') });
		try {
			const model = new TrainableModel({ name: 'busy', project: 'p', baseModel });
			await model.register(backend);
			const client = model.openaiClient();
			const order: string[] = [];
			const reply = client.chat.completions
				.create({
					model: model.name,
					messages: [{ role: 'user', content: 'Say a lot.' }],
					max_tokens: 64,
					temperature: 0
				})
				.then((c) => {
					order.push('reply');
					return c;
				});
			// the stopped run's model is deleted while its last generation still decodes
			await new Promise((r) => setTimeout(r, 1000));
			await backend.unregister(model.name).then(() => order.push('unregistered'));
			// the generation ran to its end on live buffers (freed under it, it fails)
			const completion = await reply;
			expect(order).toContain('reply');
			const c = completion.choices[0];
			expect(
				c.finish_reason === 'stop' || completion.usage?.completion_tokens === 64,
				JSON.stringify(completion.usage)
			).toBe(true);
			await expect(
				client.chat.completions.create({
					model: model.name,
					messages: [{ role: 'user', content: 'x' }]
				})
			).rejects.toThrow();
		} finally {
			await backend.close();
		}
	}, 120_000);

	it("a request's signal stops its decode in the engine, so the model is free at once", async () => {
		const backend = new LocalBackend({ path: join(root, 'runs-abort') });
		try {
			const model = new TrainableModel({ name: 'stopped', project: 'p', baseModel });
			await model.register(backend);
			const client = model.openaiClient();
			const request = {
				model: model.name,
				messages: [{ role: 'user' as const, content: 'Say a lot.' }],
				max_tokens: 96,
				temperature: 0
			};
			// the whole decode, timed (kernels compiled by a first short request)
			await client.chat.completions.create({ ...request, max_tokens: 2 });
			let t = performance.now();
			const whole = await client.chat.completions.create(request);
			const wholeMs = performance.now() - t;
			expect(whole.usage?.completion_tokens).toBe(96);
			// the same request stopped early: the engine lets go of the model within a token
			const abort = new AbortController();
			const reply = client.chat.completions.create(request, { signal: abort.signal });
			await new Promise((r) => setTimeout(r, wholeMs / 8));
			t = performance.now();
			abort.abort();
			await expect(reply).rejects.toThrow(/abort/i);
			// unregister waits for any generation in flight (the test above): it is already over
			await backend.unregister(model.name);
			const freedMs = performance.now() - t;
			expect(
				freedMs,
				`freed ${freedMs} ms after the abort; whole decode ${wholeMs} ms`
			).toBeLessThan(wholeMs / 3);
		} finally {
			await backend.close();
		}
	}, 120_000);

	it("runs ART's training loop as written, checkpointing every step and resuming", async () => {
		const backend = new LocalBackend({ path: join(root, 'runs') });
		try {
			// --- ART's README example, in TypeScript ---
			const model = new TrainableModel({
				name: 'agent-001',
				project: 'my-agentic-task',
				baseModel,
				lora: { rank: 4, alpha: 8 }
			});
			await model.register(backend);
			const client = model.openaiClient();
			const scenarios = ['e', 't'];
			const reports = [];
			for (let i = await model.getStep(); i < 2; i++) {
				const trainGroups = await gatherTrajectoryGroups(
					scenarios.map((letter, g) =>
						Array.from({ length: 4 }, (_, k) =>
							rollout(client, model, letter, 100 * i + 10 * g + k)
						)
					)
				);
				reports.push(await model.train(trainGroups, { learningRate: 1e-2 }));
			}
			// --- end of the example ---
			expect(await model.getStep()).toBe(2);
			const runDir = join(root, 'runs', 'my-agentic-task', 'models', 'agent-001');
			expect((await readdir(join(runDir, 'checkpoints'))).sort()).toEqual(['0000', '0001', '0002']);
			const files = (await readdir(join(runDir, 'checkpoints', '0002'))).sort();
			expect(files).toContain('adapter_config.json');
			expect(files).toContain('adapter_model.safetensors');
			const history = (await readFile(join(runDir, 'history.jsonl'), 'utf8'))
				.trim()
				.split('\n')
				.map((l) => JSON.parse(l));
			expect(history.map((h) => h.step)).toEqual([1, 2]);
			expect(reports.map((r) => r.skipped)).toEqual([undefined, undefined]);
			expect(reports.map((r) => r.metrics['train/checkpoint_ms'])).toEqual(
				history.map((h) => h['train/checkpoint_ms'])
			);
			for (const h of history) {
				expect(Number.isFinite(h['train/reward'])).toBe(true);
				expect(Number.isFinite(h['train/loss'])).toBe(true);
				expect(h['train/grad_norm']).toBeGreaterThan(0);
				// The checkpoint's capture and encoding are timed into the step's line.
				expect(Number.isFinite(h['train/checkpoint_ms'])).toBe(true);
				expect(h['train/checkpoint_ms']).toBeGreaterThanOrEqual(0);
				// The engine's work for the step's 8 rollouts (one sequence each, up to 6 tokens):
				// where the rollouts' time went
				expect(h['engine/sequences']).toBe(8);
				expect(h['engine/generate_calls']).toBeGreaterThanOrEqual(1);
				expect(h['engine/generate_calls']).toBeLessThanOrEqual(8);
				expect(h['engine/prompt_tokens']).toBeGreaterThan(8 * 5);
				expect(h['engine/decode_steps']).toBeGreaterThanOrEqual(h['engine/generate_calls']);
				expect(h['engine/decode_steps']).toBeLessThanOrEqual(6 * h['engine/generate_calls']);
				expect(h['engine/prefill_ms']).toBeGreaterThan(0);
				expect(h['engine/decode_ms']).toBeGreaterThan(0);
				// the calls' whole time holds their prefill and decode
				expect(h['engine/call_ms']).toBeGreaterThanOrEqual(
					h['engine/prefill_ms'] + h['engine/decode_ms']
				);
			}
			// the first step made the decode session; the second reuses it when its batch is alike
			expect(history[0]['engine/sessions']).toBeGreaterThanOrEqual(1);
			const adapter = await model.exportAdapter();

			// A second writer of the run is refused while the first holds it (run.lock)...
			const second = new LocalBackend({ path: join(root, 'runs') });
			await expect(new TrainableModel({ ...model.spec }).register(second)).rejects.toMatchObject({
				kind: 'run-locked'
			});
			await second.close();
			await backend.close();

			// ...and a new backend (a restarted process) resumes at step 2 with the same weights.
			const again = new LocalBackend({ path: join(root, 'runs') });
			try {
				const resumed = new TrainableModel({ ...model.spec });
				const reg = await resumed.register(again);
				expect(reg.step).toBe(2);
				expect(reg.checkpoints).toEqual([0, 1, 2]);
				const adapter2 = await resumed.exportAdapter();
				expect(adapter2['adapter_model.safetensors']).toEqual(adapter['adapter_model.safetensors']);

				// The best by val/reward and the latest survive deleteCheckpoints.
				await resumed.log({ reward: 0.9 }, { split: 'val' });
				const deleted = await resumed.deleteCheckpoints();
				expect(deleted).toEqual([0, 1]);
			} finally {
				await again.close();
			}
		} finally {
			await backend.close();
		}
	}, 300_000);
});
