/**
 * @file A stand-in for a catalog model (hub-models.ts) where the Hub cannot be reached (the
 * GPU machine): its published config.json and generation_config.json, random bf16 weights of
 * its shapes (uniform, 1/sqrt(fan-in); norms 1), and the environment's bundled tokenizer
 * (learned on the environment's text, so prompts are as many tokens as a real BPE makes them;
 * its ids lie below every listed vocabulary). Seconds per step and memory are the real
 * model's; what it plays is noise.
 *
 *   npx tsx tools/make-hub-standin.ts --model qwen3-0.6b --env tictactoe --out DIR [--seed N]
 */
import { copyFile, mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Rng } from '../src/lib/util/random';
import { HUB_MODELS, hubModel, hubModelConfig } from '../src/lib/model/hf/hub-models';
import { encodeSafetensors } from '../src/lib/model/hf/safetensors-writer';
import { weightSpecs } from '../src/lib/model/hf/weight-spec';
import { writeModelFiles } from '../src/lib/model/hf/node/checkpoint';
import { bundledModelPath, isEnvironmentName } from '../src/lib/run';
import { ensureBundledModel } from '../scripts/default-model';
import { STATIC_ROOT } from '../scripts/cli/static-root';
import { makeLog, printJson, runMain } from './tool-entry';

const log = makeLog('make-hub-standin');
const TOKENIZER_FILES = ['tokenizer.json', 'tokenizer_config.json', 'chat_template.jinja'];

async function main(): Promise<number> {
	const { values } = parseArgs({
		options: {
			model: { type: 'string' },
			env: { type: 'string' },
			out: { type: 'string' },
			seed: { type: 'string' }
		}
	});
	const entry = hubModel(values.model ?? '');
	if (!entry || !values.out || !isEnvironmentName(values.env ?? '')) {
		log(`usage: --model ${HUB_MODELS.map((m) => m.key).join('|')} --env ENV --out DIR [--seed N]`);
		return 2;
	}
	const env = values.env as Parameters<typeof bundledModelPath>[0];
	const config = hubModelConfig(entry);
	const rng = new Rng(Number(values.seed ?? 1));
	const tensors = weightSpecs(config).map((spec) => {
		const count = spec.shape.reduce((a, b) => a * b, 1);
		const data = new Float32Array(count);
		if (spec.shape.length === 1 && spec.name.endsWith('norm.weight')) data.fill(1);
		else {
			const bound = 1 / Math.sqrt(spec.shape.at(-1)!);
			for (let i = 0; i < count; i++) data[i] = (2 * rng.next() - 1) * bound;
		}
		return { name: spec.name, dtype: 'BF16' as const, shape: spec.shape, data };
	});
	await writeModelFiles(
		values.out,
		new Map<string, Uint8Array | string>([
			['config.json', JSON.stringify(entry.config, null, 2)],
			['generation_config.json', JSON.stringify(entry.generationConfig, null, 2)],
			['model.safetensors', encodeSafetensors(tensors)]
		])
	);
	const bundled = join(STATIC_ROOT, bundledModelPath(env));
	await ensureBundledModel(bundled, STATIC_ROOT);
	await mkdir(values.out, { recursive: true });
	for (const name of TOKENIZER_FILES)
		if (await stat(join(bundled, name)).catch(() => undefined))
			await copyFile(join(bundled, name), join(values.out, name));
	printJson({
		model: entry.id,
		out: values.out,
		parameters: tensors.reduce((n, t) => n + t.data.length, 0)
	});
	return 0;
}

runMain(main);
