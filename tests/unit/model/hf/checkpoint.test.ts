/**
 * Opening checkpoints from a local directory: every fixture (4.x / 5.x files, F32 / F16 /
 * BF16, tied / untied, sharded) reads back exactly what was written; progress is monotone
 * and ends at the total; every missing or mismatched piece is its typed error, raised
 * before weight data is read. The fixture tokenizer works with @huggingface/tokenizers.
 */
import { mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';
import { Template } from '@huggingface/jinja';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
	openCheckpointFromDirectory,
	writeModelFiles
} from '../../../../src/lib/model/hf/node/checkpoint';
import { FIXTURE_NAMES, makeFixture, type Fixture } from '../../../../src/lib/testing/fixtures';
import {
	encodeSafetensors,
	type TensorToWrite
} from '../../../../src/lib/model/hf/safetensors-writer';
import { weightSpecs } from '../../../../src/lib/model/hf/weight-spec';
import type { LoadProgress } from '../../../../src/lib/model/hf/checkpoint';
import { tinyTokenizer } from '../../../../src/lib/testing/tiny-tokenizer';

let root: string;
beforeAll(async () => {
	root = await mkdtemp(join(tmpdir(), 'tabrl-ckpt-'));
});
afterAll(async () => {
	await rm(root, { recursive: true, force: true });
});

let dirCount = 0;
/** Writes a fixture (optionally edited) into a fresh directory. */
async function writeFixture(
	fixture: Fixture,
	edit?: (files: Map<string, Uint8Array | string>) => void
): Promise<string> {
	const files = new Map(fixture.files);
	edit?.(files);
	const dir = join(root, `${fixture.name}-${dirCount++}`);
	await writeModelFiles(dir, files);
	return dir;
}

function expectMonotone(events: LoadProgress[], total: number) {
	expect(events.length).toBeGreaterThan(0);
	for (let i = 1; i < events.length; i++)
		expect(events[i].loaded).toBeGreaterThanOrEqual(events[i - 1].loaded);
	for (const e of events) expect(e.total).toBe(total);
	expect(events[events.length - 1].loaded).toBe(total);
}

function weightBytes(fixture: Fixture): number {
	let n = 0;
	for (const file of fixture.shards.keys()) n += (fixture.files.get(file) as Uint8Array).length;
	return n;
}

describe('openCheckpointFromDirectory: fixtures', () => {
	for (const name of FIXTURE_NAMES) {
		it(`${name}: config, files and every tensor as written`, async () => {
			const fixture = makeFixture(name);
			const dir = await writeFixture(fixture);
			const events: LoadProgress[] = [];
			const ckpt = await openCheckpointFromDirectory(dir, { onProgress: (p) => events.push(p) });
			expect(ckpt.config).toEqual(fixture.config);
			expect(ckpt.where).toBe(dir);
			expect(ckpt.unusedTensors).toEqual([]);
			expectMonotone(events, weightBytes(fixture));
			expect(
				ckpt.weights
					.list()
					.map((t) => t.name)
					.sort()
			).toEqual([...fixture.tensors.keys()].sort());
			for (const [tensor, values] of fixture.tensors)
				expect(Array.from(await ckpt.weights.readF32(tensor)), tensor).toEqual(Array.from(values));
			expect(ckpt.files.tokenizerJson).toBe(fixture.files.get('tokenizer.json'));
			expect(ckpt.files.configJson).toBe(fixture.files.get('config.json'));
			expect(ckpt.files.generationConfigJson).toBe(fixture.files.get('generation_config.json'));
			const inConfig = 'chat_template' in JSON.parse(ckpt.files.tokenizerConfigJson);
			if (name === 'llama-untied-bf16') {
				expect(ckpt.files.chatTemplate).toBe(fixture.files.get('chat_template.jinja'));
				expect(inConfig).toBe(false);
			} else {
				expect(ckpt.files.chatTemplate).toBeUndefined();
				expect(inConfig).toBe(true);
			}
		});
	}

	it('the variants cover what they claim', () => {
		const f = Object.fromEntries(FIXTURE_NAMES.map((n) => [n, makeFixture(n)]));
		expect(f.llama.rawConfig).toMatchObject({
			rope_scaling: { rope_type: 'llama3' },
			torch_dtype: 'float32'
		});
		expect(f.llama.config.tieWordEmbeddings).toBe(true);
		const bf16 = f['llama-untied-bf16'];
		expect(bf16.rawConfig).toMatchObject({
			rope_parameters: { rope_type: 'linear' },
			dtype: 'bfloat16'
		});
		expect(bf16.rawConfig).not.toHaveProperty('rope_theta');
		expect(bf16.config.tieWordEmbeddings).toBe(false);
		expect(bf16.tensors.has('lm_head.weight')).toBe(true);
		expect(bf16.tensors.has('model.layers.1.self_attn.o_proj.bias')).toBe(true);
		expect(f.qwen2.tensors.has('model.layers.0.self_attn.k_proj.bias')).toBe(true);
		expect(f.qwen2.tensors.has('model.layers.0.self_attn.o_proj.bias')).toBe(false);
		expect(f.qwen3.config.headDim).not.toBe(f.qwen3.config.hiddenSize / f.qwen3.config.numHeads);
		expect(f.qwen3.tensors.has('model.layers.1.self_attn.q_norm.weight')).toBe(true);
		expect([...f.qwen3.shards.keys()]).toHaveLength(2);
		const ratios = FIXTURE_NAMES.map((n) => f[n].config.numHeads / f[n].config.numKvHeads);
		expect(new Set(ratios).size).toBeGreaterThanOrEqual(3);
		// bf16 and f16 files hold values rounded to their dtype.
		const v = bf16.tensors.get('model.embed_tokens.weight')!;
		expect(v.every((x) => (new Uint32Array(Float32Array.of(x).buffer)[0] & 0xffff) === 0)).toBe(
			true
		);
		// Deterministic from the seed; another seed, other weights.
		const again = makeFixture('qwen2').tensors.get('model.norm.weight')!;
		expect(Array.from(again)).toEqual(Array.from(f.qwen2.tensors.get('model.norm.weight')!));
		const other = makeFixture('qwen2', { seed: 2 }).tensors.get('model.norm.weight')!;
		expect(Array.from(other)).not.toEqual(Array.from(again));
		expect(makeFixture('llama', { numLayers: 3 }).config.numLayers).toBe(3);
	});

	it('the fixture tokenizer is a working byte-level BPE with a chat template', () => {
		const tiny = tinyTokenizer();
		const fixture = makeFixture('qwen3');
		expect(fixture.config.vocabSize).toBeGreaterThanOrEqual(tiny.size);
		expect(fixture.config.eosTokenIds).toEqual([tiny.ids.imEnd, tiny.ids.endoftext]);
		const tok = new Tokenizer(JSON.parse(tiny.tokenizerJson), JSON.parse(tiny.tokenizerConfigJson));
		for (const text of ['the quick brown fox', 'Hello, wörld! 你好 🙂\n\ttabs']) {
			const ids = tok.encode(text, { add_special_tokens: false }).ids;
			expect(ids.every((id) => id < tiny.size)).toBe(true);
			expect(tok.decode(ids)).toBe(text);
		}
		// Merges apply: 'the' is one token.
		expect(tok.encode('the', { add_special_tokens: false }).ids).toHaveLength(1);
		const chat = new Template(tiny.chatTemplate).render({
			messages: [
				{ role: 'user', content: 'hi' },
				{
					role: 'assistant',
					content: '',
					tool_calls: [{ function: { name: 'f', arguments: { a: 1 } } }]
				},
				{ role: 'tool', content: '42' }
			],
			add_generation_prompt: true
		});
		expect(chat).toBe(
			'<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n\n<tool_call>\n' +
				'{"name": "f", "arguments": {"a": 1}}\n</tool_call><|im_end|>\n' +
				'<|im_start|>tool\n42<|im_end|>\n<|im_start|>assistant\n'
		);
		const ids = tok.encode(chat, { add_special_tokens: false }).ids;
		expect(ids[0]).toBe(tiny.ids.imStart);
		expect(ids.filter((id) => id === tiny.ids.imEnd)).toHaveLength(3);
	});
});

describe('openCheckpointFromDirectory: bad input', () => {
	const open = (dir: string) => openCheckpointFromDirectory(dir);

	it('missing files name the file and the directory', async () => {
		const fixture = makeFixture('llama');
		for (const file of [
			'config.json',
			'tokenizer.json',
			'tokenizer_config.json',
			'model.safetensors'
		]) {
			const dir = await writeFixture(fixture, (f) => f.delete(file));
			const err = await open(dir).catch((e) => e);
			expect(err).toMatchObject({ kind: 'missing-file', file, where: dir });
			expect(err.message).toContain(file);
			expect(err.message).toContain(dir);
		}
		const gone = await open(join(root, 'no-such-dir')).catch((e) => e);
		expect(gone).toMatchObject({ kind: 'missing-file', file: 'config.json' });
		// Optional files may be absent.
		const dir = await writeFixture(fixture, (f) => f.delete('generation_config.json'));
		const ckpt = await open(dir);
		expect(ckpt.files.generationConfigJson).toBeUndefined();
		expect(ckpt.config.eosTokenIds).toEqual([fixture.config.eosTokenIds[0]]);
	});

	it('a shard the index names is missing', async () => {
		const dir = await writeFixture(makeFixture('qwen3'), (f) =>
			f.delete('model-00002-of-00002.safetensors')
		);
		await expect(open(dir)).rejects.toMatchObject({
			kind: 'missing-file',
			file: 'model-00002-of-00002.safetensors'
		});
	});

	it('an unsupported architecture is refused before any weight file is looked at', async () => {
		const fixture = makeFixture('llama');
		const dir = await writeFixture(fixture, (f) => {
			f.set(
				'config.json',
				JSON.stringify({ ...fixture.rawConfig, architectures: ['MistralForCausalLM'] })
			);
			f.delete('model.safetensors');
		});
		const err = await open(dir).catch((e) => e);
		expect(err).toMatchObject({
			kind: 'unsupported-architecture',
			architecture: 'MistralForCausalLM'
		});
	});

	it('a config whose sizes do not match the tensors: every wrong shape, expected and actual', async () => {
		const fixture = makeFixture('qwen2');
		const dir = await writeFixture(fixture, (f) =>
			f.set('config.json', JSON.stringify({ ...fixture.rawConfig, intermediate_size: 40 }))
		);
		const err = await open(dir).catch((e) => e);
		expect(err.kind).toBe('weights-mismatch');
		expect(err.wrongShape).toContainEqual({
			name: 'model.layers.0.mlp.gate_proj.weight',
			expected: [40, 32],
			actual: [48, 32]
		});
		expect(err.wrongShape).toHaveLength(3 * 2);
		expect(err.message).toContain(
			'model.layers.0.mlp.gate_proj.weight is [48,32], expected [40,32]'
		);
	});

	/** Rewrites one fixture's single weight file (as F32) with an edited tensor list. */
	function rewriteWeights(fixture: Fixture, edit: (list: TensorToWrite[]) => void) {
		const shapes = shapesOf(fixture);
		const list: TensorToWrite[] = [...fixture.tensors].map(([name, data]) => ({
			name,
			dtype: 'F32',
			shape: shapes.get(name)!,
			data
		}));
		edit(list);
		return (files: Map<string, Uint8Array | string>) =>
			files.set('model.safetensors', encodeSafetensors(list));
	}

	it('a missing tensor is named', async () => {
		const fixture = makeFixture('llama');
		const dir = await writeFixture(
			fixture,
			rewriteWeights(fixture, (list) =>
				list.splice(
					list.findIndex((t) => t.name === 'model.norm.weight'),
					1
				)
			)
		);
		await expect(open(dir)).rejects.toMatchObject({
			kind: 'weights-mismatch',
			missing: ['model.norm.weight']
		});
	});

	it('untied model without lm_head; tied model with a stray lm_head (ignored)', async () => {
		const untied = makeFixture('llama-untied-bf16');
		const dir = await writeFixture(untied, (f) =>
			f.set('config.json', JSON.stringify({ ...untied.rawConfig, tie_word_embeddings: true }))
		);
		// Now tied: lm_head.weight is in the file but unused.
		expect((await open(dir)).unusedTensors).toEqual(['lm_head.weight']);
		const tied = makeFixture('llama');
		const dir2 = await writeFixture(tied, (f) =>
			f.set('config.json', JSON.stringify({ ...tied.rawConfig, tie_word_embeddings: false }))
		);
		await expect(open(dir2)).rejects.toMatchObject({
			kind: 'weights-mismatch',
			missing: ['lm_head.weight']
		});
	});

	it('an expected tensor in an unreadable dtype is refused at open, naming it', async () => {
		const fixture = makeFixture('llama');
		const bytes = fixture.files.get('model.safetensors') as Uint8Array;
		const n = new DataView(bytes.buffer, bytes.byteOffset).getUint32(0, true);
		const header = new TextDecoder().decode(bytes.subarray(8, 8 + n));
		// model.norm.weight [32] F32 (128 bytes) relabelled I32: same size, unreadable dtype.
		const relabelled = header.replace(/("model\.norm\.weight":\{"dtype":)"F32"/, '$1"I32"');
		expect(relabelled).not.toBe(header);
		const edited = bytes.slice();
		edited.set(new TextEncoder().encode(relabelled), 8);
		const dir = await writeFixture(fixture, (f) => f.set('model.safetensors', edited));
		const err = await open(dir).catch((e) => e);
		expect(err).toMatchObject({
			kind: 'unsupported-dtype',
			tensor: 'model.norm.weight',
			dtype: 'I32'
		});
	});

	it('an index that lies, escapes the folder, or a tensor in two shards', async () => {
		const fixture = makeFixture('qwen3');
		const index = JSON.parse(fixture.files.get('model.safetensors.index.json') as string);
		const moved = structuredClone(index);
		moved.weight_map['model.norm.weight'] = 'model-00001-of-00002.safetensors';
		let dir = await writeFixture(fixture, (f) =>
			f.set('model.safetensors.index.json', JSON.stringify(moved))
		);
		let err = await open(dir).catch((e) => e);
		expect(err).toMatchObject({ kind: 'corrupt-checkpoint', tensor: 'model.norm.weight' });

		const escape = structuredClone(index);
		escape.weight_map['model.norm.weight'] = '../model-00002-of-00002.safetensors';
		dir = await writeFixture(fixture, (f) =>
			f.set('model.safetensors.index.json', JSON.stringify(escape))
		);
		err = await open(dir).catch((e) => e);
		expect(err).toMatchObject({ kind: 'corrupt-checkpoint', file: 'model.safetensors.index.json' });

		dir = await writeFixture(fixture, (f) =>
			f.set('model.safetensors.index.json', '{"weight_map": ')
		);
		await expect(open(dir)).rejects.toMatchObject({ kind: 'corrupt-checkpoint' });

		// Shard 2 also holding the embedding.
		const emb = fixture.tensors.get('model.embed_tokens.weight')!;
		dir = await writeFixture(fixture, (f) => {
			const shapes = shapesOf(fixture);
			const second: TensorToWrite[] = fixture.shards
				.get('model-00002-of-00002.safetensors')!
				.map((name) => ({
					name,
					dtype: 'F32',
					shape: shapes.get(name)!,
					data: fixture.tensors.get(name)!
				}));
			second.push({
				name: 'model.embed_tokens.weight',
				dtype: 'F32',
				shape: [emb.length / 32, 32],
				data: emb
			});
			f.set('model-00002-of-00002.safetensors', encodeSafetensors(second));
		});
		err = await open(dir).catch((e) => e);
		expect(err).toMatchObject({ kind: 'corrupt-checkpoint', tensor: 'model.embed_tokens.weight' });
		expect(err.message).toMatch(/also stored in/);
	});

	it('a truncated weight file is refused at open', async () => {
		const fixture = makeFixture('qwen2');
		const bytes = fixture.files.get('model.safetensors') as Uint8Array;
		const dir = await writeFixture(fixture, (f) =>
			f.set('model.safetensors', bytes.subarray(0, bytes.length - 100))
		);
		await expect(open(dir)).rejects.toMatchObject({
			kind: 'corrupt-checkpoint',
			file: 'model.safetensors'
		});
		// And a file that is not safetensors at all.
		await unlink(join(dir, 'model.safetensors'));
		await writeFile(join(dir, 'model.safetensors'), 'version https://git-lfs.github.com/spec/v1\n');
		await expect(open(dir)).rejects.toMatchObject({ kind: 'corrupt-checkpoint' });
	});
});

function shapesOf(fixture: Fixture): Map<string, number[]> {
	return new Map(weightSpecs(fixture.config).map((w) => [w.name, w.shape]));
}
