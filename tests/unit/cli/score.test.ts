/**
 * The CLI's `score` as a child process on fixture models: the JSON on stdout, its logprobs
 * against the f64 reference (atol 3e-5 + rtol 1e-5, as transformer.test.ts) and equal to
 * scoreTokens in this process (same code and device; JSON prints f32 exactly), --text and
 * --chat tokenization, and every kind of bad input's exit status and stderr.
 */
import { sealCheckpoint } from '../../../src/lib/grpo/store/checkpoint-seal';
import { mkdir, mkdtemp, readFile, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Rng } from '../../../src/lib/util/random';
import { toTokenBatch } from '../../../src/lib/model/transformer/batch';
import type { ChatMessage, ToolSchema } from '../../../src/lib/model/tokenizer/chat-messages';
import { FIXTURE_NAMES, makeFixture, type Fixture } from '../../../src/lib/testing/fixtures';
import {
	openCheckpointFromDirectory,
	writeModelFiles
} from '../../../src/lib/model/hf/node/checkpoint';
import { referenceLogprobs } from '../../../src/lib/testing/reference';
import { Tokenizer } from '../../../src/lib/model/tokenizer/tokenizer';
import { TransformerModel } from '../../../src/lib/model/transformer/transformer';
import { peftAdapterConfig } from '../../../src/lib/grpo/store/checkpoint';
import { peftName, resolveLoraConfig } from '../../../src/lib/model/transformer/lora';
import { ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE } from '../../../src/lib/model/hf/peft-adapter';
import {
	encodeSafetensors,
	type TensorToWrite
} from '../../../src/lib/model/hf/safetensors-writer';
import { projectionShape } from '../../../src/lib/model/hf/weight-spec';
import { useGpu } from '../../helpers/gpu';
import { parseScoreArgs } from '../../../scripts/cli/score';
import { runCli, runCommand, usageText, type CliRun } from './run-cli';

const LOGPROB_TOL = { atol: 3e-5, rtol: 1e-5 };
const cli = (...args: string[]) => runCli(args, 60_000);

interface ScoreJson {
	ids: number[];
	logprobs: (number | null)[];
}

/** Parses stdout as exactly one JSON object of the documented shape. */
function parseScore(r: CliRun): ScoreJson {
	expect(r.stderr, 'stderr').toBe('');
	expect(r.code, 'exit status').toBe(0);
	const lines = r.stdout.trim().split('\n');
	expect(lines).toHaveLength(1);
	const out = JSON.parse(lines[0]) as ScoreJson;
	expect(Object.keys(out).sort()).toEqual(['ids', 'logprobs']);
	expect(out.ids.every((id) => Number.isInteger(id))).toBe(true);
	expect(out.logprobs).toHaveLength(out.ids.length);
	expect(out.logprobs[0]).toBeNull();
	for (const lp of out.logprobs.slice(1)) expect(typeof lp === 'number' && lp <= 0).toBe(true);
	return out;
}

/** The f64 reference's log p(ids[i] | ids[<i]) for i >= 1. */
function referenceFor(fixture: Fixture, ids: number[]): Float64Array {
	return referenceLogprobs(fixture.config, fixture.tensors, toTokenBatch([ids]));
}

describe('cli score', () => {
	const gpu = useGpu();
	let dir: string;
	const fixtures = new Map<string, Fixture>();
	const modelDir = (name: string) => join(dir, name);

	beforeAll(async () => {
		dir = await mkdtemp(join(tmpdir(), 'tabrl-cli-'));
		for (const name of FIXTURE_NAMES) {
			const f = makeFixture(name, { seed: 5 });
			fixtures.set(name, f);
			await writeModelFiles(modelDir(name), f.files);
		}
	});
	afterAll(() => rm(dir, { recursive: true, force: true }));

	for (const name of FIXTURE_NAMES)
		it(`--ids on ${name}: logprobs match the f64 reference`, async () => {
			const fixture = fixtures.get(name)!;
			const ids = Array.from(new Rng(3).ints(13, fixture.config.vocabSize));
			const out = parseScore(await cli('score', '--model', modelDir(name), '--ids', ids.join(',')));
			expect(out.ids).toEqual(ids);
			expect(out.logprobs.slice(1) as number[]).toBeAllclose(
				referenceFor(fixture, ids),
				LOGPROB_TOL
			);
		});

	it('--text: ids as Tokenizer.encode (no special tokens); logprobs equal scoreTokens', async () => {
		const text = '<|im_start|>hello there, the dog ran in the park. ünïcode ✓';
		const out = parseScore(await cli('score', '--model', modelDir('qwen3'), '--text', text));
		const checkpoint = await openCheckpointFromDirectory(modelDir('qwen3'));
		const { files } = checkpoint;
		const tok = Tokenizer.fromJson(
			files.tokenizerJson,
			files.tokenizerConfigJson,
			files.chatTemplate
		);
		expect(out.ids).toEqual(tok.encode(text));
		expect(out.ids[0]).toBe(tok.tokenToId('<|im_start|>'));
		const model = await TransformerModel.create(gpu(), checkpoint.config, checkpoint.weights);
		const { logprobs } = await model.scoreTokens([out.ids]);
		model.release();
		expect(out.logprobs.slice(1)).toEqual(Array.from(logprobs));
	});

	it('--chat: rendered with the model template (chat_template.jinja) and tokenized as encodeChat', async () => {
		const request: {
			messages: ChatMessage[];
			tools: ToolSchema[];
			add_generation_prompt: boolean;
		} = {
			messages: [
				{ role: 'system', content: 'you are a helpful assistant' },
				{ role: 'user', content: 'hello' },
				{
					role: 'assistant',
					content: '',
					tool_calls: [{ type: 'function', function: { name: 'add', arguments: { a: 1 } } }]
				},
				{ role: 'tool', content: '2' }
			],
			tools: [{ type: 'function', function: { name: 'add', parameters: { type: 'object' } } }],
			add_generation_prompt: true
		};
		const file = join(dir, 'chat.json');
		await writeFile(file, JSON.stringify(request));
		const name = 'llama-untied-bf16';
		const out = parseScore(await cli('score', '--model', modelDir(name), '--chat', file));
		const { files } = fixtures.get(name)!;
		const tok = Tokenizer.fromJson(
			files.get('tokenizer.json') as string,
			files.get('tokenizer_config.json') as string,
			files.get('chat_template.jinja') as string
		);
		const expected = tok.encodeChat(request.messages, {
			tools: request.tools,
			addGenerationPrompt: true
		});
		expect(out.ids).toEqual(expected);
		// Nothing added beyond the template: the ids decode to the rendering, which ends
		// with the generation prompt.
		const text = tok.decode(out.ids);
		expect(text).toBe(
			tok.applyChatTemplate(request.messages, { tools: request.tools, addGenerationPrompt: true })
		);
		expect(text.endsWith('<|im_end|>\n<|im_start|>assistant\n')).toBe(true);
		expect(out.logprobs.slice(1) as number[]).toBeAllclose(
			referenceFor(fixtures.get(name)!, out.ids),
			LOGPROB_TOL
		);
	});

	it('npm run -s cli: one token gives [null]', async () => {
		const r = await runCommand(
			'npm',
			['run', '-s', 'cli', '--', 'score', '--model', modelDir('qwen2'), '--ids', '7'],
			60_000
		);
		expect(parseScore(r)).toEqual({ ids: [7], logprobs: [null] });
	});

	describe.concurrent('bad input: stderr, no stdout, non-zero exit', () => {
		const fails = async (r: CliRun, code: number, re: RegExp) => {
			expect(r.stdout).toBe('');
			expect(r.code).toBe(code);
			expect(r.stderr).toMatch(re);
		};
		const USAGE = /usage: npm run -s cli -- score --model DIR/;

		it('usage errors exit 2 with the usage line', async () => {
			const m = ['--model', '/nonexistent'];
			await fails(await cli(), 2, /usage: npm run -s cli -- COMMAND/);
			await fails(await cli('rate', ...m), 2, /unknown command 'rate'/);
			await fails(await cli('score', '--ids', '1'), 2, /--model DIR is required/);
			// the rest from the parser itself (the printing and exit code are the CLI's, checked above)
			const mistakes: [string[], RegExp][] = [
				[m, /one of --ids, --text or --chat/],
				[[...m, '--ids', '1', '--text', 'a'], /not --ids and --text/],
				[[...m, '--idz', '1'], /Unknown option '--idz'/],
				[[...m, '--ids'], /Option '--ids <value>' argument missing/],
				[[...m, '--ids', '1,-2'], /'-2' is not a token id/],
				[[...m, '--ids', '1.5'], /'1.5' is not a token id/],
				[[...m, '--ids', '1', 'stray'], /Unexpected argument 'stray'/]
			];
			for (const [argv, message] of mistakes) {
				const text = usageText(parseScoreArgs, argv);
				expect(text, argv.join(' ')).toMatch(message);
				expect(text).toMatch(USAGE);
			}
		});

		it('a missing folder or file', async () => {
			await fails(
				await cli('score', '--model', join(dir, 'nope'), '--ids', '1'),
				1,
				/is not a directory/
			);
			const empty = join(dir, 'empty');
			await writeModelFiles(empty, new Map());
			await fails(
				await cli('score', '--model', empty, '--ids', '1'),
				1,
				/^tabrl: missing-file: Missing file 'config\.json'/
			);
		});

		it('a truncated safetensors file', async () => {
			const cut = join(dir, 'truncated');
			await writeModelFiles(cut, fixtures.get('llama')!.files);
			await truncate(join(cut, 'model.safetensors'), 1000);
			await fails(
				await cli('score', '--model', cut, '--ids', '1,2'),
				1,
				/^tabrl: corrupt-checkpoint: Corrupt checkpoint file 'model\.safetensors'/
			);
		});

		it('an unsupported architecture, named', async () => {
			const gpt = join(dir, 'gpt2');
			const f = fixtures.get('qwen2')!;
			await writeModelFiles(gpt, f.files);
			const config = { ...f.rawConfig, architectures: ['GPT2LMHeadModel'], model_type: 'gpt2' };
			await writeFile(join(gpt, 'config.json'), JSON.stringify(config));
			await fails(
				await cli('score', '--model', gpt, '--ids', '1,2'),
				1,
				/^tabrl: unsupported-architecture: .*'GPT2LMHeadModel'/
			);
		});

		it('ids outside the vocabulary, an unreadable or invalid chat file', async () => {
			const m = ['score', '--model', modelDir('llama')];
			await fails(
				await cli(...m, '--ids', '1,100000'),
				1,
				/token id 100000 is outside .*\[0, 320\)/
			);
			await fails(await cli(...m, '--chat', join(dir, 'none.json')), 1, /--chat: cannot read/);
			const bad = join(dir, 'bad.json');
			await writeFile(bad, '{"messages": [');
			await fails(await cli(...m, '--chat', bad), 1, /--chat: .* is not valid JSON/);
			const wrong = join(dir, 'wrong.json');
			await writeFile(
				wrong,
				JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], temp: 1 })
			);
			await fails(
				await cli(...m, '--chat', wrong),
				1,
				/^tabrl: chat-messages: Unknown key\(s\) .*temp/
			);
			await fails(await cli(...m, '--text', ''), 1, /no tokens/);
		});

		it('--adapter with a NaN weight: a typed error, not null logprobs', async () => {
			const f = fixtures.get('llama')!;
			const adapterDir = join(dir, 'nan-adapter');
			const lora = resolveLoraConfig({ rank: 2, alpha: 4, targetModules: ['q_proj'] });
			const tensors: TensorToWrite[] = [];
			for (let layer = 0; layer < f.config.numLayers; layer++) {
				const [out, inF] = projectionShape(f.config, 'q_proj');
				const b = new Float32Array(out * 2).fill(0.01);
				if (layer === 1) b[3] = NaN;
				tensors.push(
					{
						name: peftName(layer, 'q_proj', 'A'),
						dtype: 'F32',
						shape: [2, inF],
						data: new Float32Array(2 * inF).fill(0.01)
					},
					{ name: peftName(layer, 'q_proj', 'B'), dtype: 'F32', shape: [out, 2], data: b }
				);
			}
			await mkdir(adapterDir, { recursive: true });
			await writeFile(
				join(adapterDir, ADAPTER_CONFIG_FILE),
				JSON.stringify(peftAdapterConfig(lora, 'llama'))
			);
			await writeFile(join(adapterDir, ADAPTER_WEIGHTS_FILE), encodeSafetensors(tensors));
			await fails(
				await cli('score', '--model', modelDir('llama'), '--adapter', adapterDir, '--ids', '1,2,3'),
				1,
				/^tabrl: non-finite-weights: .*layers\.1\.self_attn\.q_proj\.lora_B/
			);
		});

		it('--adapter a checkpoint folder whose bytes changed: checkpoint-corrupt naming the file', async () => {
			const f = fixtures.get('llama')!;
			const adapterDir = join(dir, 'sealed-adapter');
			const lora = resolveLoraConfig({ rank: 2, alpha: 4, targetModules: ['q_proj'] });
			const tensors: TensorToWrite[] = [];
			for (let layer = 0; layer < f.config.numLayers; layer++) {
				const [out, inF] = projectionShape(f.config, 'q_proj');
				for (const [ab, shape] of [
					['A', [2, inF]],
					['B', [out, 2]]
				] as const)
					tensors.push({
						name: peftName(layer, 'q_proj', ab),
						dtype: 'F32',
						shape: [...shape],
						data: new Float32Array(shape[0] * shape[1]).fill(0.01)
					});
			}
			// saved as a run saves a checkpoint (sealed), then 64 bytes of its weights flipped
			const sealed = await sealCheckpoint(
				new Map([
					[
						ADAPTER_CONFIG_FILE,
						new TextEncoder().encode(JSON.stringify(peftAdapterConfig(lora, 'llama')))
					],
					[ADAPTER_WEIGHTS_FILE, encodeSafetensors(tensors)]
				])
			);
			await mkdir(adapterDir, { recursive: true });
			for (const [name, bytes] of sealed) await writeFile(join(adapterDir, name), bytes);
			const weights = sealed.get(ADAPTER_WEIGHTS_FILE)!;
			for (let i = weights.length - 64; i < weights.length; i++) weights[i] ^= 0xff;
			await writeFile(join(adapterDir, ADAPTER_WEIGHTS_FILE), weights);
			await fails(
				await cli('score', '--model', modelDir('llama'), '--adapter', adapterDir, '--ids', '1,2,3'),
				1,
				/^tabrl: checkpoint-corrupt: Checkpoint .*sealed-adapter\/adapter_model\.safetensors: its sha256/
			);
		});
	});

	it('writes nothing into the model folder', async () => {
		const before = await readFile(join(modelDir('llama'), 'config.json'), 'utf8');
		expect(JSON.parse(before).architectures).toEqual(['LlamaForCausalLM']);
	});
});
