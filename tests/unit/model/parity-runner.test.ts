/**
 * The TS side of the transformers parity check (tools/parity/parity-runner.ts) on a
 * directory laid out as model_parity.py writes it, built here from fixture models with
 * f64 CPU-reference expectations (parity-dir.ts): the runner must load sharded, F16 and
 * BF16 folders without tokenizer files, read the PEFT adapters, and report errors at the
 * GPU's f32 level (observed ~1e-6 for logprobs and gradients) as a pass; a wrong adapter
 * (lora_alpha written doubled) and a missing expected tensor must be reported as failures.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compareLogprobs, runParity } from '../../../tools/parity/parity-runner';
import { useGpu } from '../../helpers/gpu';
import { LOCAL_PARITY_CASES, writeParityDir } from './parity-dir';

describe('model parity runner (TS side)', () => {
	const gpu = useGpu();
	let root: string;

	beforeAll(async () => {
		root = await mkdtemp(join(tmpdir(), 'tabrl-parity-'));
		await writeParityDir(root, [
			...LOCAL_PARITY_CASES,
			{ ...LOCAL_PARITY_CASES[2], name: 'wrong-alpha', writtenAlpha: 6 }
		]);
	});
	afterAll(() => rm(root, { recursive: true, force: true }));

	it('passes every well-formed case with errors at f32 level, fails the wrong adapter', async () => {
		const report = await runParity(gpu(), root);
		const byName = new Map(report.cases.map((c) => [c.name, c]));
		for (const c of LOCAL_PARITY_CASES) {
			const r = byName.get(c.name)!;
			expect(r.error, c.name).toBeUndefined();
			expect(r.pass, c.name).toBe(true);
			for (const lp of Object.values(r.logprobs!)) {
				expect(lp.maxAbs).toBeLessThan(3e-5);
				expect(lp.nanMismatch).toBe(0);
				expect(lp.count).toBe(c.lengths.reduce((s, n) => s + n - 1, 0));
			}
			expect(r.grads!.maxRel).toBeLessThan(1e-4);
			expect(r.grads!.tensors).toBe(2 * 2 * c.targets.length);
			// F16 and BF16 folders run with f16 matrices on the GPU (weightDtype 'auto').
			const f16 = c.fixture === 'qwen2' || c.fixture === 'llama-untied-bf16';
			expect(r.gpuWeights!.f16 > 0, c.name).toBe(f16);
			expect(r.gpuWeights!.f32).toBeGreaterThan(0); // norms
		}
		const wrong = byName.get('wrong-alpha')!;
		expect(wrong.pass).toBe(false);
		expect(wrong.logprobs!.base.maxAbs).toBeLessThan(3e-5); // the base model is right
		expect(wrong.logprobs!.lora.maxAbs).toBeGreaterThan(1e-3);
		expect(wrong.grads!.maxRel).toBeGreaterThan(1e-3);
		expect(report.pass).toBe(false);
		expect(Object.keys(report.worstByArchitecture).sort()).toEqual([
			'LlamaForCausalLM',
			'Qwen2ForCausalLM',
			'Qwen3ForCausalLM'
		]);
		expect(report.worstByArchitecture.Qwen2ForCausalLM.cases).toBe(2);

		const good = await runParity(gpu(), root, { only: LOCAL_PARITY_CASES.map((c) => c.name) });
		expect(good.pass).toBe(true);
	});

	it('reports a case with an unreadable expected file, and Python-side failures, as failures', async () => {
		const c = LOCAL_PARITY_CASES[1];
		await writeFile(join(root, c.name, 'expected.safetensors'), new Uint8Array(5));
		const report = await runParity(gpu(), root, { only: [c.name] });
		expect(report.cases[0].pass).toBe(false);
		expect(report.cases[0].error).toMatch(/CorruptCheckpointError|expected/);
		expect(report.pass).toBe(false);
	});

	it('compareLogprobs: NaN on one side only is a mismatch', () => {
		const e = compareLogprobs([-1, NaN, -2], [-1.5, NaN, NaN]);
		expect(e).toEqual({ maxAbs: 0.5, maxRel: 0.5 / 1.5, count: 1, nanMismatch: 1 });
	});
});
