/**
 * @file `cli generate`: new tokens for one prompt, sampled on the GPU with a KV cache.
 *
 *   generate --model DIR [--adapter DIR] (--ids 1,2,3 | --text STRING | --chat FILE) --max-tokens N
 *       --temperature T [--top-p P] [--top-k K] [--seed S] [--ignore-eos]
 *
 * prints {"prompt_ids", "ids" (new, a stop token kept), "logprobs" (log_softmax(logits / T),
 * T = 1 when greedy), "text", "finish_reason"}. The prompt is read as `score` reads it; stops
 * at the model's eos ids unless --ignore-eos. File problems come before the GPU.
 */
import { acquireGpu } from '../../src/lib/gpu/device';
import { parseChatRequest } from '../../src/lib/model/tokenizer/chat-template';
import { ContextLengthError } from '../../src/lib/model/errors';
import { Generator } from '../../src/lib/model/generate/generator';
import { Tokenizer } from '../../src/lib/model/tokenizer/tokenizer';
import {
	CliInputError,
	numberFlag as numberFlagOf,
	parseFlags,
	parseIdList,
	UsageError
} from './args';
import { createModel, openModelFolder, readAdapterFolder, readChatFile } from './model-folder';
import type { ScoreInput } from './score';

export const GENERATE_USAGE =
	'usage: npm run -s cli -- generate --model DIR [--adapter DIR] (--ids 1,2,3 | --text STRING | --chat FILE) ' +
	'--max-tokens N --temperature T [--top-p P] [--top-k K] [--seed S] [--ignore-eos]';

export interface GenerateArgs {
	model: string;
	/** A PEFT adapter folder applied to the model. */
	adapter?: string;
	input: ScoreInput;
	maxTokens: number;
	temperature: number;
	topP?: number;
	topK?: number;
	seed?: number;
	ignoreEos: boolean;
}

export interface GenerateOutput {
	prompt_ids: number[];
	ids: number[];
	logprobs: number[];
	text: string;
	finish_reason: 'stop' | 'length';
}

const numberFlag = (
	name: string,
	text: string | undefined,
	ok: (n: number) => boolean,
	what: string
) => numberFlagOf(name, text, ok, what, GENERATE_USAGE);

export function parseGenerateArgs(argv: readonly string[]): GenerateArgs {
	// --ignore-eos is the one flag without a value; parseFlags reads the rest.
	const eosFlags = argv.filter((a) => a === '--ignore-eos').length;
	if (eosFlags > 1) throw new UsageError(`--ignore-eos is given ${eosFlags} times`, GENERATE_USAGE);
	const flags = parseFlags(
		argv.filter((a) => a !== '--ignore-eos'),
		{
			model: {},
			adapter: {},
			ids: {},
			text: {},
			chat: {},
			'max-tokens': {},
			temperature: {},
			'top-p': {},
			'top-k': {},
			seed: {}
		},
		GENERATE_USAGE
	);
	if (flags.model === undefined) throw new UsageError('--model DIR is required', GENERATE_USAGE);
	const given = (['ids', 'text', 'chat'] as const).filter((k) => flags[k] !== undefined);
	if (given.length !== 1)
		throw new UsageError(
			given.length === 0
				? 'give the prompt: one of --ids, --text or --chat'
				: `give one input, not ${given.map((k) => `--${k}`).join(' and ')}`,
			GENERATE_USAGE
		);
	const input: ScoreInput =
		flags.ids !== undefined
			? { kind: 'ids', ids: parseIdList(flags.ids, GENERATE_USAGE) }
			: flags.text !== undefined
				? { kind: 'text', text: flags.text }
				: { kind: 'chat', file: flags.chat! };
	const maxTokens = numberFlag(
		'max-tokens',
		flags['max-tokens'],
		(n) => Number.isSafeInteger(n) && n >= 1,
		'a positive integer'
	);
	if (maxTokens === undefined) throw new UsageError('--max-tokens N is required', GENERATE_USAGE);
	const temperature = numberFlag(
		'temperature',
		flags.temperature,
		(n) => Number.isFinite(n) && n >= 0,
		'a number >= 0 (0: greedy)'
	);
	if (temperature === undefined)
		throw new UsageError('--temperature T is required (0: greedy)', GENERATE_USAGE);
	return {
		model: flags.model,
		adapter: flags.adapter,
		input,
		maxTokens,
		temperature,
		topP: numberFlag('top-p', flags['top-p'], (n) => n > 0 && n <= 1, 'a number in (0, 1]'),
		topK: numberFlag(
			'top-k',
			flags['top-k'],
			(n) => Number.isSafeInteger(n) && n >= 0,
			'a non-negative integer (0: off)'
		),
		seed: numberFlag('seed', flags.seed, (n) => Number.isSafeInteger(n), 'an integer'),
		ignoreEos: eosFlags === 1
	};
}

export async function runGenerate(args: GenerateArgs): Promise<GenerateOutput> {
	const checkpoint = await openModelFolder(args.model);
	const { config, files } = checkpoint;
	const adapter = args.adapter ? await readAdapterFolder(args.adapter, config) : undefined;
	const tokenizer = Tokenizer.fromJson(
		files.tokenizerJson,
		files.tokenizerConfigJson,
		files.chatTemplate
	);
	let ids: number[];
	if (args.input.kind === 'ids') ids = args.input.ids;
	else if (args.input.kind === 'text') ids = tokenizer.encode(args.input.text);
	else {
		const { messages, options } = parseChatRequest(await readChatFile(args.input.file));
		ids = tokenizer.encodeChat(messages, options);
	}
	if (ids.length === 0) throw new CliInputError('the prompt has no tokens: nothing to continue');
	const outside = ids.find((id) => id >= config.vocabSize);
	if (outside !== undefined)
		throw new CliInputError(
			`token id ${outside} is outside the model's vocabulary [0, ${config.vocabSize})`
		);
	if (ids.length > config.maxPositionEmbeddings)
		throw new ContextLengthError(ids.length, config.maxPositionEmbeddings, 0);

	const gpu = await acquireGpu();
	try {
		const model = await createModel(gpu, checkpoint, adapter);
		const generator = new Generator(model, { maxBatch: 1 });
		try {
			const [out] = await generator.generate([ids], {
				maxTokens: args.maxTokens,
				temperature: args.temperature,
				topP: args.topP,
				topK: args.topK,
				seed: args.seed,
				ignoreEos: args.ignoreEos
			});
			return {
				prompt_ids: ids,
				ids: out.ids,
				logprobs: out.logprobs,
				text: tokenizer.decode(out.ids, { skipSpecialTokens: true }),
				finish_reason: out.finishReason
			};
		} finally {
			generator.release();
			model.release();
		}
	} finally {
		gpu.destroy();
	}
}
