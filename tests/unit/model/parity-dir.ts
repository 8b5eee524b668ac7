/**
 * @file A directory laid out as tools/parity/model_parity.py writes it (manifest.json;
 * per case model/, adapter/ as PEFT saves it, expected.safetensors), built from our own
 * fixture models with expected values from the f64 CPU reference (reference.ts): logprobs
 * directly, LoRA gradients by central finite differences in f64 (h = 1e-5, exact to ~1e-9,
 * see backward.test.ts). Exercises the TS parity runner without PyTorch.
 */
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Rng } from '../../../src/lib/util/random';
import { toTokenBatch } from '../../../src/lib/model/transformer/batch';
import { makeFixture, type FixtureName } from '../../../src/lib/testing/fixtures';
import { peftName } from '../../../src/lib/model/transformer/lora';
import { writeModelFiles } from '../../../src/lib/model/hf/node/checkpoint';
import { referenceLogprobs, referenceLoss } from '../../../src/lib/testing/reference';
import { encodeSafetensors } from '../../../src/lib/model/hf/safetensors-writer';
import { projectionShape, type ProjectionName } from '../../../src/lib/model/hf/weight-spec';
import { encodeExpected, type ExpectedToWrite } from '../../../tools/parity/expected-file';

export interface LocalParityCase {
	name: string;
	fixture: FixtureName;
	rank: number;
	alpha: number;
	targets: ProjectionName[];
	lengths: number[];
	seed: number;
	/** Leave tokenizer.json / tokenizer_config.json out, as the Python side does. */
	noTokenizer?: boolean;
	/** Write this lora_alpha into adapter_config.json instead (a wrong adapter: must fail). */
	writtenAlpha?: number;
}

export async function writeParityDir(root: string, cases: LocalParityCase[]): Promise<void> {
	const entries = [];
	for (const c of cases) {
		const f = makeFixture(c.fixture, { seed: c.seed });
		const { config } = f;
		const files = new Map(f.files);
		if (c.noTokenizer) {
			files.delete('tokenizer.json');
			files.delete('tokenizer_config.json');
		}
		await rm(join(root, c.name), { recursive: true, force: true });
		await writeModelFiles(join(root, c.name, 'model'), files);

		const rng = new Rng(c.seed + 7);
		const params = new Map<string, Float64Array>();
		const adapterTensors = [];
		for (let layer = 0; layer < config.numLayers; layer++)
			for (const m of c.targets) {
				const [out, inF] = projectionShape(config, m);
				const a = rng.uniform(c.rank * inF, -1 / Math.sqrt(inF), 1 / Math.sqrt(inF));
				const b = rng.normals(out * c.rank, 0.1);
				params.set(peftName(layer, m, 'A'), Float64Array.from(a));
				params.set(peftName(layer, m, 'B'), Float64Array.from(b));
				adapterTensors.push({
					name: peftName(layer, m, 'A'),
					dtype: 'F32' as const,
					shape: [c.rank, inF],
					data: a
				});
				adapterTensors.push({
					name: peftName(layer, m, 'B'),
					dtype: 'F32' as const,
					shape: [out, c.rank],
					data: b
				});
			}
		const adapterConfig = {
			peft_type: 'LORA',
			task_type: 'CAUSAL_LM',
			r: c.rank,
			lora_alpha: c.writtenAlpha ?? c.alpha,
			lora_dropout: 0.0,
			target_modules: c.targets,
			bias: 'none',
			use_rslora: false,
			use_dora: false,
			rank_pattern: {},
			alpha_pattern: {},
			modules_to_save: null
		};
		await writeModelFiles(
			join(root, c.name, 'adapter'),
			new Map<string, string | Uint8Array>([
				['adapter_config.json', JSON.stringify(adapterConfig)],
				['adapter_model.safetensors', encodeSafetensors(adapterTensors, { format: 'pt' })]
			])
		);

		const B = c.lengths.length;
		const T = Math.max(...c.lengths);
		const ids = new Array<number>(B * T).fill(0);
		c.lengths.forEach((n, b) => {
			for (let t = 0; t < n; t++) ids[b * T + t] = rng.int(config.vocabSize);
		});
		const batch = toTokenBatch({ ids, lengths: c.lengths, seqLen: T });
		const w = Array.from(rng.normals(B * (T - 1)));
		c.lengths.forEach((n, b) => {
			for (let t = n - 1; t < T - 1; t++) w[b * (T - 1) + t] = 0;
		});
		const lora = { scale: c.alpha / c.rank, params };
		const grads: ExpectedToWrite[] = [];
		const h = 1e-5;
		for (const [name, v] of params) {
			const g = new Float64Array(v.length);
			for (let i = 0; i < v.length; i++) {
				const old = v[i];
				v[i] = old + h;
				const up = referenceLoss(config, f.tensors, batch, w, lora);
				v[i] = old - h;
				const down = referenceLoss(config, f.tensors, batch, w, lora);
				v[i] = old;
				g[i] = (up - down) / (2 * h);
			}
			const shape = name.includes('lora_A')
				? [c.rank, v.length / c.rank]
				: [v.length / c.rank, c.rank];
			grads.push({ name: `grad/${name}`, dtype: 'F64', shape, data: g });
		}
		const lp = (withLora: boolean) =>
			referenceLogprobs(config, f.tensors, batch, withLora ? lora : undefined);
		const expected = encodeExpected([
			{ name: 'ids', dtype: 'I64', shape: [B, T], data: ids },
			{ name: 'lengths', dtype: 'I64', shape: [B], data: c.lengths },
			{ name: 'w', dtype: 'F64', shape: [B, T - 1], data: w },
			{ name: 'logprobs_base', dtype: 'F64', shape: [B, T - 1], data: lp(false) },
			{ name: 'logprobs_lora', dtype: 'F64', shape: [B, T - 1], data: lp(true) },
			...grads
		]);
		await writeFile(join(root, c.name, 'expected.safetensors'), expected);
		entries.push({
			name: c.name,
			architecture: config.architecture,
			model: `${c.name}/model`,
			adapter: `${c.name}/adapter`,
			expected: `${c.name}/expected.safetensors`,
			file_dtype: config.dtype
		});
	}
	const manifest = {
		generated_by: { script: 'tests/unit/model/parity-dir.ts (f64 CPU reference)' },
		cases: entries,
		failures: []
	};
	await writeFile(join(root, 'manifest.json'), JSON.stringify(manifest, null, 1));
}

/** The cases the runner test uses (and the bundle check: see parity-runner.test.ts). */
export const LOCAL_PARITY_CASES: LocalParityCase[] = [
	{
		name: 'qwen3-sharded-no-tokenizer',
		fixture: 'qwen3',
		rank: 2,
		alpha: 4,
		targets: ['q_proj', 'v_proj'],
		lengths: [6, 3],
		seed: 11,
		noTokenizer: true
	},
	{
		name: 'llama-untied-bf16',
		fixture: 'llama-untied-bf16',
		rank: 1,
		alpha: 2,
		targets: ['o_proj', 'down_proj'],
		lengths: [5, 2, 4],
		seed: 12
	},
	{
		name: 'qwen2-f16',
		fixture: 'qwen2',
		rank: 1,
		alpha: 3,
		targets: ['k_proj', 'gate_proj'],
		lengths: [4, 5],
		seed: 13
	}
];
