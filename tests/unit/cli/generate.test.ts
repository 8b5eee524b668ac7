/**
 * The CLI's `generate` command run as a child process (tsx scripts/cli.ts, as `npm run cli`
 * runs it) on fixture models written to a temp dir: the one JSON object on stdout, equal
 * to Generator.generate in this process (same code, same device type: the numbers must be
 * identical, and JSON prints an f32 value's double exactly), the prompt from --ids, --text
 * and --chat, a seed that repeats, and the exit status and stderr of bad input. What the
 * numbers mean (argmax and logprobs against the f64 reference) is generation.test.ts's job.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../../src/lib/model/tokenizer/chat-messages';
import { makeFixture, type Fixture } from '../../../src/lib/testing/fixtures';
import { Generator } from '../../../src/lib/model/generate/generator';
import type { GenerateOptions } from '../../../src/lib/model/generate/options';
import {
	openCheckpointFromDirectory,
	writeModelFiles
} from '../../../src/lib/model/hf/node/checkpoint';
import { Tokenizer } from '../../../src/lib/model/tokenizer/tokenizer';
import { TransformerModel } from '../../../src/lib/model/transformer/transformer';
import { useGpu } from '../../helpers/gpu';
import { parseGenerateArgs } from '../../../scripts/cli/generate';
import { runCli, usageText, type CliRun } from './run-cli';

/** The child's time limit: the 2 shared cores under load ran a call past a minute. */
const cli = (...args: string[]) => runCli(args, 180_000);

interface GenerateJson {
	prompt_ids: number[];
	ids: number[];
	logprobs: number[];
	text: string;
	finish_reason: string;
}

/** Parses stdout as exactly one JSON object of the documented shape. */
function parseGenerate(r: CliRun): GenerateJson {
	expect(r.stderr, 'stderr').toBe('');
	expect(r.code, 'exit status').toBe(0);
	const lines = r.stdout.trim().split('\n');
	expect(lines).toHaveLength(1);
	const out = JSON.parse(lines[0]) as GenerateJson;
	expect(Object.keys(out).sort()).toEqual([
		'finish_reason',
		'ids',
		'logprobs',
		'prompt_ids',
		'text'
	]);
	expect(out.logprobs).toHaveLength(out.ids.length);
	for (const lp of out.logprobs) expect(lp).toBeLessThanOrEqual(0);
	expect(['stop', 'length']).toContain(out.finish_reason);
	return out;
}

describe('cli generate', () => {
	const gpu = useGpu();
	let dir: string;
	const fixtures = new Map<string, Fixture>();
	const modelDir = (name: string) => join(dir, name);

	beforeAll(async () => {
		dir = await mkdtemp(join(tmpdir(), 'tabrl-cli-generate-'));
		for (const name of ['llama', 'qwen3'] as const) {
			const f = makeFixture(name, { seed: 5 });
			fixtures.set(name, f);
			await writeModelFiles(modelDir(name), f.files);
		}
	});
	afterAll(() => rm(dir, { recursive: true, force: true }));

	/** Generator.generate in this process on the same folder. */
	async function inProcess(name: string, ids: number[], options: GenerateOptions) {
		const checkpoint = await openCheckpointFromDirectory(modelDir(name));
		const model = await TransformerModel.create(gpu(), checkpoint.config, checkpoint.weights);
		const generator = new Generator(model);
		const [out] = await generator.generate([ids], options);
		generator.release();
		model.release();
		return out;
	}

	function tokenizerOf(name: string): Tokenizer {
		const { files } = fixtures.get(name)!;
		return Tokenizer.fromJson(
			files.get('tokenizer.json') as string,
			files.get('tokenizer_config.json') as string,
			files.get('chat_template.jinja') as string | undefined
		);
	}

	it('--ids, greedy, --ignore-eos: max tokens, as Generator.generate', async () => {
		const ids = [5, 17, 200, 3];
		const out = parseGenerate(
			await cli(
				'generate',
				'--model',
				modelDir('llama'),
				'--ids',
				ids.join(','),
				'--max-tokens',
				'6',
				'--temperature',
				'0',
				'--ignore-eos'
			)
		);
		expect(out.prompt_ids).toEqual(ids);
		expect(out.ids).toHaveLength(6);
		expect(out.finish_reason).toBe('length');
		const expected = await inProcess('llama', ids, {
			maxTokens: 6,
			temperature: 0,
			ignoreEos: true
		});
		expect(out.ids).toEqual(expected.ids);
		expect(out.logprobs).toEqual(expected.logprobs);
		expect(out.text).toBe(tokenizerOf('llama').decode(out.ids, { skipSpecialTokens: true }));
	});

	it('--text with --seed, --top-k, --top-p: the same output twice, as Generator.generate', async () => {
		const text = 'the dog ran in the park';
		const args = [
			'generate',
			'--model',
			modelDir('qwen3'),
			'--text',
			text,
			'--max-tokens',
			'5',
			'--temperature',
			'0.8',
			'--top-k',
			'50',
			'--top-p',
			'0.9',
			'--seed',
			'42'
		];
		const [a, b] = await Promise.all([cli(...args), cli(...args)]);
		const out = parseGenerate(a);
		expect(parseGenerate(b)).toEqual(out);
		const tok = tokenizerOf('qwen3');
		expect(out.prompt_ids).toEqual(tok.encode(text));
		const expected = await inProcess('qwen3', out.prompt_ids, {
			maxTokens: 5,
			temperature: 0.8,
			topK: 50,
			topP: 0.9,
			seed: 42
		});
		expect(out.ids).toEqual(expected.ids);
		expect(out.logprobs).toEqual(expected.logprobs);
		expect(out.finish_reason).toBe(expected.finishReason);
		// A stop token (the config's eos) ends the output and is kept in ids, not in text.
		if (out.finish_reason === 'stop')
			expect(fixtures.get('qwen3')!.config.eosTokenIds).toContain(out.ids.at(-1));
	});

	it('--chat: the prompt rendered with the chat template and its generation prompt', async () => {
		const messages: ChatMessage[] = [{ role: 'user', content: 'hello' }];
		const file = join(dir, 'chat.json');
		await writeFile(file, JSON.stringify({ messages, add_generation_prompt: true }));
		const out = parseGenerate(
			await cli(
				'generate',
				'--model',
				modelDir('qwen3'),
				'--chat',
				file,
				'--max-tokens',
				'2',
				'--temperature',
				'0'
			)
		);
		const tok = tokenizerOf('qwen3');
		expect(out.prompt_ids).toEqual(tok.encodeChat(messages, { addGenerationPrompt: true }));
		expect(tok.decode(out.prompt_ids).endsWith('<|im_start|>assistant\n')).toBe(true);
	});

	describe.concurrent('bad input: stderr, no stdout, non-zero exit', () => {
		const fails = async (r: CliRun, code: number, re: RegExp) => {
			expect(r.stdout).toBe('');
			expect(r.code).toBe(code);
			expect(r.stderr).toMatch(re);
		};
		const USAGE = /usage: npm run -s cli -- generate --model DIR/;

		it('usage errors exit 2 with the usage line', async () => {
			const m = ['generate', '--model', '/nonexistent', '--ids', '1'];
			const n = ['--max-tokens', '4', '--temperature', '1'];
			await fails(await cli(...m, '--temperature', '1'), 2, /--max-tokens N is required/);
			// the rest from the parser itself (the printing and exit code are the CLI's, checked above)
			const g = m.slice(1);
			const mistakes: [string[], RegExp][] = [
				[[...g, '--max-tokens', '4'], /--temperature T is required/],
				[['--model', '/x', ...n], /one of --ids, --text/],
				[[...g, '--text', 'a', ...n], /not --ids and --text/],
				[[...g, ...n, '--max-tokens', '4'], /--max-tokens is given 2 times/],
				[[...g, '--max-tokens', '0', '--temperature', '1'], USAGE],
				[[...g, '--max-tokens', '2.5', '--temperature', '1'], /'2.5'/],
				[[...g, '--max-tokens', '4', '--temperature=-1'], /'-1' is not/],
				[[...g, ...n, '--top-p', '0'], /--top-p: '0' is not/],
				[[...g, ...n, '--top-k', 'x'], /--top-k: 'x' is not/],
				[[...g, ...n, '--seed', '1e99'], /--seed: '1e99' is not/],
				[[...g, ...n, '--ignore-eos', '--ignore-eos'], /2 times/],
				[[...g, ...n, '--stop', '3'], /Unknown option '--stop'/]
			];
			for (const [argv, message] of mistakes) {
				const text = usageText(parseGenerateArgs, argv);
				expect(text, argv.join(' ')).toMatch(message);
				expect(text).toMatch(USAGE);
			}
		});

		it('a missing folder, ids outside the vocabulary, a prompt over the context', async () => {
			const n = ['--max-tokens', '4', '--temperature', '1'];
			await fails(
				await cli('generate', '--model', join(dir, 'nope'), '--ids', '1', ...n),
				1,
				/is not a directory/
			);
			await fails(
				await cli('generate', '--model', modelDir('llama'), '--ids', '1,100000', ...n),
				1,
				/token id 100000 is outside/
			);
			// The llama fixture's max_position_embeddings is 8192.
			const long = new Array(8193).fill(7).join(',');
			await fails(
				await cli('generate', '--model', modelDir('llama'), '--ids', long, ...n),
				1,
				/^tabrl: context-length: Prompt 0 has 8193 tokens, more than the context window of 8192/
			);
		});
	});
});
