/**
 * Warm starts through the Node LocalBackend on Dawn, a random PEFT adapter with its
 * manifest: merged into the base, the model (fresh adapter on top) scores as the base with
 * it stacked (greedy alike, logprobs within 1e-4, unlike the base); with another base it is
 * 'warm-start-mismatch', nothing written; a run reopened with another base, warm start or
 * mode is 'run-exists'.
 */
import { access, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TrainableModel, type ModelSpec } from '../../../../src/lib/agent';
import { LocalBackend } from '../../../../src/lib/agent/backend/node/backend';
import type { TabrlChoice } from '../../../../src/lib/serve/response';
import { encodeTrainingCheckpoint } from '../../../../src/lib/grpo/store/checkpoint';
import { peftName, type LoraConfig } from '../../../../src/lib/model/transformer/lora';
import {
	openCheckpointFromDirectory,
	writeModelFiles
} from '../../../../src/lib/model/hf/node/checkpoint';
import { ADAPTER_WEIGHTS_FILE } from '../../../../src/lib/model/hf/peft-adapter';
import {
	sha256Hex,
	tensorsSha256,
	WARM_START_MANIFEST,
	type WarmStartManifest
} from '../../../../src/lib/model/hf/warm-start';
import { projectionShape } from '../../../../src/lib/model/hf/weight-spec';
import { makeFixture } from '../../../../src/lib/testing/fixtures';
import { Rng } from '../../../../src/lib/util/random';
import { failure } from '../../../helpers/failure';

const LORA: LoraConfig = {
	rank: 4,
	alpha: 8,
	dropout: 0,
	targetModules: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj']
};

let root: string;
let baseA: string;
let baseB: string;
let adapterDir: string;
let backend: LocalBackend;

beforeAll(async () => {
	root = await mkdtemp(join(tmpdir(), 'tabrl-warm-start-'));
	baseA = join(root, 'base-a');
	baseB = join(root, 'base-b');
	const fixture = makeFixture('llama', { seed: 5 });
	await writeModelFiles(baseA, fixture.files);
	await writeModelFiles(baseB, makeFixture('llama', { seed: 6 }).files);

	// A random adapter (B != 0, unlike a fresh one) in PEFT's files, as a checkpoint writes it.
	const rng = new Rng(3);
	const params = new Map<string, Float32Array>();
	for (let layer = 0; layer < fixture.config.numLayers; layer++)
		for (const m of LORA.targetModules) {
			const [out, inF] = projectionShape(fixture.config, m);
			params.set(peftName(layer, m, 'A'), Float32Array.from(rng.normals(LORA.rank * inF, 0.2)));
			params.set(peftName(layer, m, 'B'), Float32Array.from(rng.normals(out * LORA.rank, 0.2)));
		}
	const files = encodeTrainingCheckpoint({
		step: 1,
		lora: LORA,
		baseModel: baseA,
		params,
		metrics: {},
		created: new Date().toISOString()
	});
	adapterDir = join(root, 'warm-start');
	await mkdir(adapterDir, { recursive: true });
	for (const name of ['adapter_config.json', ADAPTER_WEIGHTS_FILE])
		await writeFile(join(adapterDir, name), files.get(name)!);
	const manifest: WarmStartManifest = {
		format: 'tabrl-warm-start/1',
		environment: 'letters',
		base: {
			name: 'base-a',
			tensorsSha256: await tensorsSha256((await openCheckpointFromDirectory(baseA)).weights)
		},
		adapterSha256: await sha256Hex(files.get(ADAPTER_WEIGHTS_FILE)!),
		command: 'tests/unit/agent/backend/warm-start-backend.test.ts',
		seed: 3,
		made: '2025-01-01'
	};
	await writeFile(join(adapterDir, WARM_START_MANIFEST), JSON.stringify(manifest));
	backend = new LocalBackend({ path: join(root, 'runs') });
}, 60_000);
afterAll(async () => {
	await backend?.close();
	await rm(root, { recursive: true, force: true });
});

const PROJECT = 'warm';
const runDir = (name: string) => join(root, 'runs', PROJECT, 'models', name);
const exists = (path: string) =>
	access(path).then(
		() => true,
		() => false
	);

async function register(spec: Omit<ModelSpec, 'project'>): Promise<TrainableModel> {
	const model = new TrainableModel({ project: PROJECT, maxContext: 128, ...spec });
	await model.register(backend);
	return model;
}

/** The greedy reply to one prompt: its token ids and their logprobs. */
async function score(model: TrainableModel) {
	const completion = await model.openaiClient().chat.completions.create({
		model: model.name,
		messages: [{ role: 'user', content: 'Say something about tic-tac-toe.' }],
		max_tokens: 6,
		temperature: 0
	});
	const { ids, logprobs } = (completion.choices[0] as TabrlChoice).tabrl;
	return { ids, logprobs };
}

const maxDiff = (a: number[], b: number[]) => Math.max(...a.map((x, i) => Math.abs(x - b[i])));

describe('warm starts through the backend', () => {
	it('merged scores as the base with the adapter stacked, and unlike the base alone', async () => {
		const merged = await register({
			name: 'merged',
			baseModel: baseA,
			lora: { rank: 4, alpha: 8 },
			warmStart: { adapter: adapterDir, mode: 'merged' }
		});
		const stacked = await register({
			name: 'stacked',
			baseModel: baseA,
			warmStart: { adapter: adapterDir, mode: 'stacked' }
		});
		const plain = await register({ name: 'plain', baseModel: baseA, lora: { rank: 4, alpha: 8 } });
		const [m, s, p] = [await score(merged), await score(stacked), await score(plain)];
		console.log(
			`merged ${m.ids} vs stacked ${s.ids}: max |dlogprob| ${maxDiff(m.logprobs, s.logprobs).toExponential(2)}; base alone ${p.ids}`
		);
		expect(m.ids).toEqual(s.ids);
		expect(maxDiff(m.logprobs, s.logprobs)).toBeLessThan(1e-4);
		// the warm start changes the policy (else the comparison above shows nothing)
		const differs =
			p.ids.some((id, i) => id !== m.ids[i]) || maxDiff(p.logprobs, m.logprobs) > 1e-2;
		expect(differs).toBe(true);

		// stacked starts its trainable adapter from the warm start's weights; merged from a fresh one
		const stackedAdapter = await stacked.exportAdapter();
		const onDisk = new Uint8Array(await readFile(join(adapterDir, ADAPTER_WEIGHTS_FILE)));
		expect(stackedAdapter[ADAPTER_WEIGHTS_FILE]).toEqual(onDisk);
		expect(stacked.registration?.lora.rank).toBe(4);
		// the run summary records the warm start
		const meta = JSON.parse(await readFile(join(runDir('merged'), 'run.json'), 'utf8'));
		expect(meta.warmStart).toEqual({ adapter: adapterDir, mode: 'merged' });
		expect(meta.baseModel).toBe(baseA);
		for (const name of ['merged', 'stacked', 'plain']) await backend.unregister(name);

		// the same warm start in the other mode is another run: its adapter fits the other base
		const swapped = await failure(
			register({
				name: 'merged',
				baseModel: baseA,
				warmStart: { adapter: adapterDir, mode: 'stacked' }
			})
		);
		expect(swapped.kind).toBe('run-exists');
	}, 300_000);

	it("refuses the adapter with another base as 'warm-start-mismatch', writing nothing", async () => {
		const error = await failure(
			register({
				name: 'other-base',
				baseModel: baseB,
				warmStart: { adapter: adapterDir, mode: 'merged' }
			})
		);
		expect(error.kind).toBe('warm-start-mismatch');
		expect(error.message).toContain('base-a');
		expect(await exists(runDir('other-base'))).toBe(false);
		// stacked is checked alike
		const stacked = await failure(
			register({
				name: 'other-base',
				baseModel: baseB,
				warmStart: { adapter: adapterDir, mode: 'stacked' }
			})
		);
		expect(stacked.kind).toBe('warm-start-mismatch');
		expect(await exists(runDir('other-base'))).toBe(false);
	}, 300_000);

	it("refuses the adapter when the base's tokenizer is not the one it was made with", async () => {
		// the same weights with another tokenizer.json: a manifest naming another tokenizer
		const manifest = JSON.parse(await readFile(join(adapterDir, WARM_START_MANIFEST), 'utf8'));
		const otherDir = join(root, 'warm-start-other-tokenizer');
		await mkdir(otherDir, { recursive: true });
		for (const name of ['adapter_config.json', ADAPTER_WEIGHTS_FILE])
			await writeFile(join(otherDir, name), await readFile(join(adapterDir, name)));
		const tokenizerJson = await readFile(join(baseA, 'tokenizer.json'), 'utf8');
		await writeFile(
			join(otherDir, WARM_START_MANIFEST),
			JSON.stringify({
				...manifest,
				base: {
					...manifest.base,
					tokenizerSha256: await sha256Hex(new TextEncoder().encode(tokenizerJson + ' '))
				}
			})
		);
		const error = await failure(
			register({
				name: 'other-tokenizer',
				baseModel: baseA,
				warmStart: { adapter: otherDir, mode: 'merged' }
			})
		);
		expect(error.kind).toBe('warm-start-mismatch');
		expect(error.message).toContain('another tokenizer');
		expect(await exists(runDir('other-tokenizer'))).toBe(false);
		// the right tokenizer's hash is accepted
		await writeFile(
			join(otherDir, WARM_START_MANIFEST),
			JSON.stringify({
				...manifest,
				base: {
					...manifest.base,
					tokenizerSha256: await sha256Hex(new TextEncoder().encode(tokenizerJson))
				}
			})
		);
		const model = await register({
			name: 'same-tokenizer',
			baseModel: baseA,
			warmStart: { adapter: otherDir, mode: 'merged' }
		});
		expect(await model.getStep()).toBe(0);
	}, 300_000);

	it("refuses a saved run reopened with another base or warm start as 'run-exists'", async () => {
		const first = await register({ name: 'kept', baseModel: baseA, lora: { rank: 4, alpha: 8 } });
		expect(first.registration?.step).toBe(0);
		await backend.unregister('kept');
		const meta = await readFile(join(runDir('kept'), 'run.json'), 'utf8');
		const other = await failure(register({ name: 'kept', baseModel: baseB }));
		expect(other.kind).toBe('run-exists');
		expect(other.message).toContain(baseA);
		const warm = await failure(
			register({
				name: 'kept',
				baseModel: baseA,
				warmStart: { adapter: adapterDir, mode: 'merged' }
			})
		);
		expect(warm.kind).toBe('run-exists');
		// the saved run is left as it was, and opens again with what it was made from
		expect(await readFile(join(runDir('kept'), 'run.json'), 'utf8')).toBe(meta);
		const again = await register({ name: 'kept', baseModel: baseA, lora: { rank: 4, alpha: 8 } });
		expect(again.registration?.checkpoints).toEqual([0]);
		await backend.unregister('kept');
	}, 300_000);
});
