/**
 * Warm starts (model/hf/warm-start.ts), no GPU: MergedWeights reads each targeted projection as
 * exactly what mergeLora (lora-merge.ts) computes and every other tensor as stored, and lists
 * merged tensors as float32; tensorsSha256 depends on the tensors, not on their order in the
 * file, and sees a one-byte change; checkWarmStart refuses another base or a changed
 * adapter file, and parseWarmStartManifest refuses what is not a manifest, both as
 * 'warm-start-mismatch'.
 */
import { describe, expect, it } from 'vitest';
import { memoryByteSource } from '../../../../src/lib/model/hf/byte-source';
import { WarmStartMismatchError } from '../../../../src/lib/model/errors';
import { peftName } from '../../../../src/lib/model/transformer/lora';
import { mergeLora, type NamedTensor } from '../../../../src/lib/model/hf/lora-merge';
import type { PeftAdapter } from '../../../../src/lib/model/hf/peft-adapter';
import { readSafetensorsHeader } from '../../../../src/lib/model/hf/safetensors';
import { SafetensorsWeights } from '../../../../src/lib/model/hf/safetensors-weights';
import {
	encodeSafetensors,
	type WritableDType
} from '../../../../src/lib/model/hf/safetensors-writer';
import type { ModelConfig } from '../../../../src/lib/model/types';
import {
	checkWarmStart,
	MergedWeights,
	parseWarmStartManifest,
	sha256Hex,
	tensorsSha256,
	type WarmStartManifest
} from '../../../../src/lib/model/hf/warm-start';
import {
	projectionPath,
	projectionShape,
	type ProjectionName
} from '../../../../src/lib/model/hf/weight-spec';
import { makeFixture, type FixtureName } from '../../../../src/lib/testing/fixtures';
import { Rng } from '../../../../src/lib/util/random';

const TARGETS: ProjectionName[] = ['q_proj', 'v_proj', 'up_proj', 'down_proj'];

function randomAdapter(config: ModelConfig, rank = 4, alpha = 8, seed = 5): PeftAdapter {
	const rng = new Rng(seed);
	const params = new Map<string, Float32Array>();
	for (let layer = 0; layer < config.numLayers; layer++)
		for (const m of TARGETS) {
			const [out, inF] = projectionShape(config, m);
			params.set(peftName(layer, m, 'A'), Float32Array.from(rng.normals(rank * inF, 0.1)));
			params.set(peftName(layer, m, 'B'), Float32Array.from(rng.normals(out * rank, 0.1)));
		}
	return { config: { rank, alpha, dropout: 0, targetModules: TARGETS }, params };
}

/** One safetensors file's bytes as a SafetensorsWeights. */
async function weightsOf(bytes: Uint8Array, file = 'model.safetensors') {
	const source = memoryByteSource(bytes);
	const header = await readSafetensorsHeader(source, file);
	return new SafetensorsWeights([header], new Map([[file, source]]));
}

/** A fixture's weights (every shard), as openCheckpoint would index them. */
async function fixtureWeights(name: FixtureName, seed = 1) {
	const fixture = makeFixture(name, { seed });
	const headers = [];
	const sources = new Map();
	for (const file of fixture.shards.keys()) {
		const bytes = fixture.files.get(file) as Uint8Array;
		const source = memoryByteSource(bytes);
		headers.push(await readSafetensorsHeader(source, file));
		sources.set(file, source);
	}
	return { fixture, weights: new SafetensorsWeights(headers, sources) };
}

const FILE_DTYPE: Record<string, WritableDType> = {
	float32: 'F32',
	float16: 'F16',
	bfloat16: 'BF16'
};

/** All tensors of `weights` re-encoded into one file, in the order `order` gives. */
async function reencode(weights: SafetensorsWeights, order: (names: string[]) => string[]) {
	const byName = new Map(weights.list().map((t) => [t.name, t]));
	const tensors = [];
	for (const name of order([...byName.keys()])) {
		const t = byName.get(name)!;
		tensors.push({
			name,
			dtype: FILE_DTYPE[t.dtype],
			shape: t.shape,
			data: await weights.readF32(name)
		});
	}
	return encodeSafetensors(tensors);
}

const expectMismatch = async (p: Promise<unknown> | (() => unknown)) => {
	const run = typeof p === 'function' ? Promise.resolve().then(p) : p;
	const error = await run.then(
		() => undefined,
		(e: unknown) => e
	);
	expect(error).toBeInstanceOf(WarmStartMismatchError);
	expect((error as WarmStartMismatchError).kind).toBe('warm-start-mismatch');
	return error as WarmStartMismatchError;
};

describe('MergedWeights', () => {
	it.each(['llama', 'qwen2'] as const)(
		'%s: targeted projections read as mergeLora computes them, bit for bit; the rest as stored',
		async (name) => {
			const { fixture, weights } = await fixtureWeights(name);
			const adapter = randomAdapter(fixture.config);
			const merged = new MergedWeights(fixture.config, weights, adapter);
			const tensors: NamedTensor[] = [];
			for (const t of weights.list())
				tensors.push({ name: t.name, shape: t.shape, data: await weights.readF32(t.name) });
			const expected = new Map(
				mergeLora(fixture.config, tensors, adapter).map((t) => [t.name, t.data])
			);
			const targeted = new Set<string>();
			for (let layer = 0; layer < fixture.config.numLayers; layer++)
				for (const m of TARGETS) targeted.add(`${projectionPath(layer, m)}.weight`);
			expect(targeted.size).toBe(fixture.config.numLayers * TARGETS.length);
			for (const t of tensors) {
				const got = await merged.readF32(t.name);
				expect(got).toEqual(expected.get(t.name)); // exact: same f32 arithmetic
				if (targeted.has(t.name)) expect(got).not.toEqual(t.data);
				else expect(got).toEqual(t.data);
			}
		}
	);

	it('lists merged tensors as float32 and the rest in their stored dtype', async () => {
		const { fixture, weights } = await fixtureWeights('qwen2'); // stored as F16
		const merged = new MergedWeights(fixture.config, weights, randomAdapter(fixture.config));
		const base = new Map(weights.list().map((t) => [t.name, t]));
		const listed = merged.list();
		expect(listed.map((t) => t.name)).toEqual([...base.keys()]);
		let mergedCount = 0;
		for (const t of listed) {
			const isTarget = TARGETS.some((m) => t.name.endsWith(`.${m}.weight`));
			expect(t.shape).toEqual(base.get(t.name)!.shape);
			if (isTarget) {
				mergedCount++;
				expect(t.dtype).toBe('float32');
			} else expect(t.dtype).toBe(base.get(t.name)!.dtype);
		}
		expect(mergedCount).toBe(fixture.config.numLayers * TARGETS.length);
		expect(base.get('model.layers.0.mlp.down_proj.weight')!.dtype).toBe('float16');

		// The raw readers: a merged tensor exists only as f32; the rest come from the base.
		const q = 'model.layers.0.self_attn.q_proj.weight';
		const k = 'model.layers.0.self_attn.k_proj.weight';
		// (thrown or rejected: either way an awaiting caller sees it)
		await expect(Promise.resolve().then(() => merged.readF16Bits!(q))).rejects.toThrow(RangeError);
		expect(await merged.readF16Bits!(k)).toEqual(await weights.readF16Bits(k));
		const rows = await merged.readF32Rows!(q, 3, 2);
		const all = await merged.readF32(q);
		const cols = base.get(q)!.shape[1];
		expect(rows).toEqual(all.slice(3 * cols, 5 * cols));
	});

	it('refuses an adapter that targets no weight of the base', async () => {
		const { fixture, weights } = await fixtureWeights('llama');
		const noLayers = { ...fixture.config, numLayers: 0 };
		// no layers: nothing to check; a base without the projections is refused
		expect(() => new MergedWeights(noLayers, weights, randomAdapter(fixture.config))).not.toThrow();
		const onlyEmbeddings = {
			list: () => weights.list().filter((t) => !t.name.includes('layers')),
			readF32: (n: string) => weights.readF32(n)
		};
		await expectMismatch(
			() => new MergedWeights(fixture.config, onlyEmbeddings, randomAdapter(fixture.config))
		);
	});
});

describe('tensorsSha256', () => {
	it('does not depend on the order of the tensors in the file, or on sharding', async () => {
		const { weights } = await fixtureWeights('llama');
		const hash = await tensorsSha256(weights);
		expect(hash).toMatch(/^[0-9a-f]{64}$/);
		const reversed = await weightsOf(await reencode(weights, (n) => [...n].reverse()));
		expect([...reversed.index.keys()]).not.toEqual([...weights.index.keys()]);
		expect(await tensorsSha256(reversed)).toBe(hash);
		// qwen3's fixture is two shards; the same tensors in one file hash alike
		const sharded = (await fixtureWeights('qwen3')).weights;
		const single = await weightsOf(await reencode(sharded, (n) => n));
		expect(await tensorsSha256(single)).toBe(await tensorsSha256(sharded));
	});

	it('changes when one byte of one tensor changes, and with the seed', async () => {
		const { fixture, weights } = await fixtureWeights('llama');
		const hash = await tensorsSha256(weights);
		const bytes = (fixture.files.get('model.safetensors') as Uint8Array).slice();
		bytes[bytes.length - 1] ^= 1; // the last byte of the last tensor's data
		expect(await tensorsSha256(await weightsOf(bytes))).not.toBe(hash);
		expect(await tensorsSha256((await fixtureWeights('llama', 2)).weights)).not.toBe(hash);
		// the same weights again: the same hash
		expect(await tensorsSha256((await fixtureWeights('llama')).weights)).toBe(hash);
	});
});

describe('checkWarmStart and the manifest', () => {
	async function setup() {
		const { fixture, weights } = await fixtureWeights('llama');
		const adapter = randomAdapter(fixture.config);
		const adapterBytes = encodeSafetensors(
			[...adapter.params].map(([name, data]) => ({
				name,
				dtype: 'F32' as const,
				shape: [data.length],
				data
			}))
		);
		const manifest: WarmStartManifest = {
			format: 'tabrl-warm-start/1',
			environment: 'tictactoe',
			base: { name: 'llama-fixture', tensorsSha256: await tensorsSha256(weights) },
			adapterSha256: await sha256Hex(adapterBytes),
			command: 'test',
			seed: 1,
			made: '2025-01-01'
		};
		return { weights, adapterBytes, manifest };
	}

	it('accepts the base and adapter the manifest names', async () => {
		const { weights, adapterBytes, manifest } = await setup();
		await expect(checkWarmStart(manifest, weights, adapterBytes, 'ws')).resolves.toBeUndefined();
	});

	it("refuses another base as 'warm-start-mismatch', naming the base it was made for", async () => {
		const { adapterBytes, manifest } = await setup();
		const other = (await fixtureWeights('llama', 2)).weights;
		const error = await expectMismatch(checkWarmStart(manifest, other, adapterBytes, 'ws'));
		expect(error.message).toContain('llama-fixture');
		expect(error.message).toContain('ws');
		const wrongHash = { ...manifest, base: { ...manifest.base, tensorsSha256: '0'.repeat(64) } };
		const { weights } = await setup();
		await expectMismatch(checkWarmStart(wrongHash, weights, adapterBytes, 'ws'));
	});

	it("refuses a changed or cut adapter file as 'warm-start-mismatch'", async () => {
		const { weights, adapterBytes, manifest } = await setup();
		const changed = adapterBytes.slice();
		changed[changed.length - 3] ^= 0x10;
		const error = await expectMismatch(checkWarmStart(manifest, weights, changed, 'ws'));
		expect(error.message).toContain('adapter_model.safetensors');
		await expectMismatch(checkWarmStart(manifest, weights, adapterBytes.subarray(0, 100), 'ws'));
	});

	it('parses a manifest and refuses garbage', async () => {
		const { manifest } = await setup();
		expect(parseWarmStartManifest(JSON.stringify(manifest), 'ws')).toEqual(manifest);
		const garbage = [
			'',
			'not json',
			'{"format": "tabrl-warm-start/1"',
			'null',
			'[]',
			'42',
			JSON.stringify({ ...manifest, format: 'tabrl-warm-start/2' }),
			JSON.stringify({ ...manifest, base: undefined }),
			JSON.stringify({ ...manifest, base: { name: 'x', tensorsSha256: 7 } }),
			JSON.stringify({ ...manifest, adapterSha256: undefined }),
			JSON.stringify({ ...manifest, environment: null })
		];
		for (const text of garbage) {
			const error = await expectMismatch(() => parseWarmStartManifest(text, 'somewhere'));
			expect(error.message).toContain('somewhere');
		}
	});
});
