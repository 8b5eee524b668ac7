/**
 * `cli export --merge` on a run folder made here (no GPU): the output is a Hugging Face
 * model, the base's files plus one model.safetensors where each targeted projection is
 * W + (alpha / r) B A (f64-checked to f32 rounding) and every other tensor the base's, bit
 * for bit, opened by the engine's loader. Bad input (existing --out, no run.json, a step not
 * kept, changed bytes) writes nothing.
 */
import { existsSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseExportArgs, runExport } from '../../../scripts/cli/export';
import { UsageError } from '../../../scripts/cli/args';
import { encodeTrainingCheckpoint, modelFingerprint } from '../../../src/lib/grpo/store/checkpoint';
import { NodeRunStore } from '../../../src/lib/grpo/store/node/run-store';
import { peftName, resolveLoraConfig } from '../../../src/lib/model/transformer/lora';
import {
	openCheckpointFromDirectory,
	writeModelFiles
} from '../../../src/lib/model/hf/node/checkpoint';
import { projectionPath, projectionShape } from '../../../src/lib/model/hf/weight-spec';
import { preset } from '../../../src/lib/run';
import { makeFixture } from '../../../src/lib/testing/fixtures';
import { Rng } from '../../../src/lib/util/random';

let root: string;
let base: string;
let run: string;
const lora = resolveLoraConfig({ rank: 4, alpha: 8, targetModules: ['q_proj', 'down_proj'] });
let params: Map<string, Float32Array>;

beforeAll(async () => {
	root = await mkdtemp(join(tmpdir(), 'tabrl-export-'));
	base = join(root, 'base');
	run = join(root, 'run');
	await writeModelFiles(base, makeFixture('llama', { seed: 3 }).files);
	const { config } = await openCheckpointFromDirectory(base);
	const rng = new Rng(5);
	params = new Map();
	for (let layer = 0; layer < config.numLayers; layer++)
		for (const m of lora.targetModules) {
			const [out, inF] = projectionShape(config, m);
			params.set(peftName(layer, m, 'A'), rng.normals(lora.rank * inF, 0.2));
			params.set(peftName(layer, m, 'B'), rng.normals(out * lora.rank, 0.2));
		}
	const store = await NodeRunStore.open(run);
	const recipe = { ...preset('letters', '/'), baseModel: base, lora: { rank: 4, alpha: 8 } };
	await store.writeMeta({
		name: 'run',
		project: 'cli',
		baseModel: base,
		recipe,
		step: 2,
		lastReward: 0.5,
		created: '2026-12-05T00:00:00.000Z',
		updated: '2026-12-05T00:00:00.000Z'
	});
	const checkpoint = (step: number) =>
		encodeTrainingCheckpoint({
			step,
			lora,
			baseModel: base,
			fingerprint: modelFingerprint(config),
			params,
			metrics: {},
			created: '2026-12-05T00:00:00.000Z'
		});
	await store.saveCheckpoint(1, checkpoint(1));
	await store.saveCheckpoint(2, checkpoint(2));
	await store.close();
}, 60_000);
afterAll(() => rm(root, { recursive: true, force: true }));

describe('cli export --merge', () => {
	it('writes a Hugging Face folder with the adapter merged into the base', async () => {
		const out = join(root, 'merged');
		const r = await runExport(parseExportArgs(['--merge', '--run', run, '--out', out]));
		expect(r).toMatchObject({ out, step: 2, base, merged: 2 * 2 }); // 2 layers x 2 targets
		const names = (await readdir(out)).sort();
		const baseNames = (await readdir(base)).sort();
		expect(names).toEqual(baseNames); // config, tokenizer, ... and model.safetensors
		for (const name of baseNames.filter((n) => !n.endsWith('.safetensors')))
			expect(await readFile(join(out, name)), name).toEqual(await readFile(join(base, name)));

		const before = await openCheckpointFromDirectory(base);
		const after = await openCheckpointFromDirectory(out);
		const { config } = before;
		expect(after.weights.list()).toEqual(before.weights.list()); // names, dtypes, shapes
		const targeted = new Set<string>();
		for (let layer = 0; layer < config.numLayers; layer++)
			for (const m of lora.targetModules) {
				const name = `${projectionPath(layer, m)}.weight`;
				targeted.add(name);
				const [out_, inF] = projectionShape(config, m);
				const w = await before.weights.readF32(name);
				const a = params.get(peftName(layer, m, 'A'))!;
				const b = params.get(peftName(layer, m, 'B'))!;
				const want = new Float64Array(out_ * inF);
				for (let o = 0; o < out_; o++)
					for (let i = 0; i < inF; i++) {
						let s = 0;
						for (let k = 0; k < lora.rank; k++) s += b[o * lora.rank + k] * a[k * inF + i];
						want[o * inF + i] = w[o * inF + i] + (lora.alpha / lora.rank) * s;
					}
				// f32 arithmetic over rank 4: within 1e-5 relative (+ 1e-6 absolute)
				expect(await after.weights.readF32(name)).toBeAllclose(want, { rtol: 1e-5, atol: 1e-6 });
			}
		for (const t of before.weights.list().filter((x) => !targeted.has(x.name)))
			expect(await after.weights.readF32(t.name), t.name).toEqual(
				await before.weights.readF32(t.name)
			);
	});

	it("takes --base for a run whose run.json names its base by URL (a page's run), and refuses it without", async () => {
		const pageRun = join(root, 'page-run');
		await cp(run, pageRun, { recursive: true });
		const metaFile = join(pageRun, 'run.json');
		const meta = JSON.parse(await readFile(metaFile, 'utf8'));
		const url = 'https://example.org/models/some-base';
		meta.baseModel = meta.recipe.baseModel = url;
		await writeFile(metaFile, JSON.stringify(meta));
		await expect(runExport({ run: pageRun, out: join(root, 'p1') })).rejects.toThrow(
			/--base: the run's base model is https:\/\/example\.org\/models\/some-base, not a folder here/
		);
		expect(existsSync(join(root, 'p1'))).toBe(false);
		const r = await runExport(
			parseExportArgs(['--merge', '--run', pageRun, '--out', join(root, 'p2'), '--base', base])
		);
		expect(r).toMatchObject({ step: 2, base, merged: 4 });
		expect(await readFile(join(root, 'p2', 'model.safetensors'))).toEqual(
			await readFile(join(root, 'merged', 'model.safetensors'))
		);
	});

	it('refuses an existing --out, a folder with no run, a step not kept, a changed checkpoint, another base: nothing written', async () => {
		const taken = join(root, 'taken');
		await mkdir(taken);
		await expect(runExport({ run, out: taken })).rejects.toThrow(/already exists/);
		await expect(runExport({ run: base, out: join(root, 'x1') })).rejects.toThrow(
			/holds no run of `cli train`/
		);
		await expect(runExport({ run, out: join(root, 'x2'), step: 7 })).rejects.toThrow(
			/keeps checkpoints of steps 1, 2/
		);
		const file = join(run, 'checkpoints', '0002', 'adapter_model.safetensors');
		const bytes = new Uint8Array(await readFile(file));
		bytes[bytes.length - 1] ^= 0xff;
		await writeFile(file, bytes);
		await expect(runExport({ run, out: join(root, 'x3') })).rejects.toThrow(
			/checkpoint-corrupt|0002\/adapter_model\.safetensors: its sha256/
		);
		// an adapter for another base: a model of another shape named as --base
		const otherBase = join(root, 'other-base');
		await writeModelFiles(otherBase, makeFixture('qwen2', { seed: 4 }).files);
		const wrongBase = await runExport(
			parseExportArgs([
				'--merge',
				'--run',
				run,
				'--out',
				join(root, 'x5'),
				'--base',
				otherBase,
				'--step',
				'1'
			])
		).then(
			() => null,
			(e: Error) => e
		);
		expect(wrongBase?.name).toBe('AdapterMismatchError');
		expect(wrongBase?.message).toMatch(
			/checkpoints\/0001 was trained on another base model: architecture LlamaForCausalLM there, Qwen2ForCausalLM here/
		);
		for (const x of ['x1', 'x2', 'x3', 'x5']) expect(existsSync(join(root, x))).toBe(false);
		expect((await readdir(root)).filter((n) => n.includes('.tmp-'))).toEqual([]);
		// the step before is intact and exports
		const r = await runExport({ run, out: join(root, 'x4'), step: 1 });
		expect(r.step).toBe(1);
		expect(() => parseExportArgs(['--run', run, '--out', 'o'])).toThrow(UsageError);
	});
});
