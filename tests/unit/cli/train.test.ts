/**
 * `cli train` run as a child process on the tiny llama fixture (tic-tac-toe, SwiftShader):
 * one SFT step on legal-play transcripts then GRPO rounds; the files it promises (history
 * lines with the step's metrics, PEFT checkpoints per step) are there; `score --adapter`
 * reads a checkpoint and scores differently from the base model; an adapter for another
 * model and bad flags are refused with their exit codes.
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeFixture } from '../../../src/lib/testing/fixtures';
import { writeModelFiles } from '../../../src/lib/model/node-checkpoint';
import { runCli } from './run-cli';

let root: string;
let llama: string;
let qwen2: string;
beforeAll(async () => {
	root = await mkdtemp(join(tmpdir(), 'tabrl-cli-train-'));
	llama = join(root, 'llama');
	qwen2 = join(root, 'qwen2');
	await writeModelFiles(llama, makeFixture('llama', { seed: 5 }).files);
	await writeModelFiles(qwen2, makeFixture('qwen2', { seed: 5 }).files);
});
afterAll(() => rm(root, { recursive: true, force: true }));

/** `train` with the usual flags, `over` replacing or adding some (values as typed). */
function trainArgs(over: Record<string, string>): string[] {
	const flags = {
		env: 'tictactoe',
		model: llama,
		steps: '1',
		groups: '1',
		'group-size': '2',
		out: root,
		...over
	};
	return ['train', ...Object.entries(flags).flatMap(([k, v]) => [`--${k}`, v])];
}

describe('cli train', () => {
	it('trains, writes history.jsonl and PEFT checkpoints, and score --adapter reads them', async () => {
		const out = join(root, 'run');
		const r = await runCli(
			trainArgs({
				out,
				'sft-first': '1',
				lr: '0.05',
				seed: '3',
				'max-tokens': '6',
				rank: '4'
			}),
			300_000
		);
		expect(r.code, r.stderr).toBe(0);
		const result = JSON.parse(r.stdout);
		expect(result.step).toBeGreaterThanOrEqual(1);
		expect(result.checkpoints[0]).toBe(0);
		expect(r.stderr).toMatch(/sft step 1: loss \d/);
		const history = (await readFile(join(out, 'history.jsonl'), 'utf8'))
			.trim()
			.split('\n')
			.map((l) => JSON.parse(l));
		expect(history[0].step).toBe(1);
		expect(history[0]['sft/loss']).toBeGreaterThan(0);
		const grpo = history.filter((h) => 'train/reward' in h);
		expect(grpo.length).toBeGreaterThanOrEqual(1);
		for (const h of grpo) expect(Number.isFinite(h['train/rollout_ms'])).toBe(true);
		expect((await readdir(join(out, 'checkpoints'))).sort()).toEqual(
			result.checkpoints.map((s: number) => String(s).padStart(4, '0'))
		);
		const config = JSON.parse(
			await readFile(join(out, 'checkpoints', '0001', 'adapter_config.json'), 'utf8')
		);
		expect(config).toMatchObject({ peft_type: 'LORA', r: 4, lora_alpha: 8 });

		const base = await runCli(['score', '--model', llama, '--text', 'hello world'], 180_000);
		expect(base.code, base.stderr).toBe(0);
		const tuned = await runCli(
			[
				'score',
				'--model',
				llama,
				'--adapter',
				join(out, 'checkpoints', '0001'),
				'--text',
				'hello world'
			],
			180_000
		);
		expect(tuned.code, tuned.stderr).toBe(0);
		const a = JSON.parse(base.stdout).logprobs.slice(1);
		const b = JSON.parse(tuned.stdout).logprobs.slice(1);
		expect(a).toHaveLength(b.length);
		expect(a.some((v: number, i: number) => Math.abs(v - b[i]) > 1e-4)).toBe(true);

		const wrong = await runCli(
			['score', '--model', qwen2, '--adapter', join(out, 'checkpoints', '0001'), '--text', 'hi'],
			60_000
		);
		expect(wrong.code).toBe(1);
		expect(wrong.stderr).toMatch(/^tabrl: lora-config: /);
	}, 600_000);

	it('refuses bad flags with the usage line', async () => {
		const r = await runCli(trainArgs({ env: 'chess' }), 60_000);
		expect(r.code).toBe(2);
		expect(r.stderr).toMatch(/--env: 'chess' is not an environment/);
		const s = await runCli(trainArgs({ 'group-size': '1' }), 60_000);
		expect(s.code).toBe(2);
		expect(s.stderr).toMatch(/--group-size: '1' is not an integer >= 2/);
	}, 120_000);
});
