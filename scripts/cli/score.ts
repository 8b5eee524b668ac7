/**
 * @file `cli score`: per-token logprobs of a token sequence under a model folder.
 *
 *   score --model DIR [--adapter DIR] (--ids 1,2,3 | --text STRING | --chat FILE)
 *
 * prints {"ids", "logprobs"}: logprobs[i] = log p(ids[i] | ids[<i]), logprobs[0] = null.
 * --text adds no special tokens; --chat FILE ({"messages", "tools"?, ...}) is rendered with
 * the chat template. Every file problem is reported before the GPU is touched.
 */
import { acquireGpu } from '../../src/lib/gpu/device';
import { parseChatRequest } from '../../src/lib/model/tokenizer/chat-template';
import { ContextLengthError } from '../../src/lib/model/errors';
import { Tokenizer } from '../../src/lib/model/tokenizer/tokenizer';
import { CliInputError, parseFlags, parseIdList, UsageError } from './args';
import { createModel, openModelFolder, readAdapterFolder, readChatFile } from './model-folder';

export const SCORE_USAGE =
	'usage: npm run -s cli -- score --model DIR [--adapter DIR] (--ids 1,2,3 | --text STRING | --chat FILE)';

export type ScoreInput =
	{ kind: 'ids'; ids: number[] } | { kind: 'text'; text: string } | { kind: 'chat'; file: string };

export interface ScoreArgs {
	model: string;
	/** A PEFT adapter folder applied to the model. */
	adapter?: string;
	input: ScoreInput;
}

export interface ScoreOutput {
	ids: number[];
	logprobs: (number | null)[];
}

export function parseScoreArgs(argv: readonly string[]): ScoreArgs {
	const flags = parseFlags(
		argv,
		{ model: {}, adapter: {}, ids: {}, text: {}, chat: {} },
		SCORE_USAGE
	);
	if (flags.model === undefined) throw new UsageError('--model DIR is required', SCORE_USAGE);
	const given = (['ids', 'text', 'chat'] as const).filter((k) => flags[k] !== undefined);
	if (given.length !== 1)
		throw new UsageError(
			given.length === 0
				? 'give the tokens: one of --ids, --text or --chat'
				: `give one input, not ${given.map((k) => `--${k}`).join(' and ')}`,
			SCORE_USAGE
		);
	const input: ScoreInput =
		flags.ids !== undefined
			? { kind: 'ids', ids: parseIdList(flags.ids, SCORE_USAGE) }
			: flags.text !== undefined
				? { kind: 'text', text: flags.text }
				: { kind: 'chat', file: flags.chat! };
	return { model: flags.model, adapter: flags.adapter, input };
}

export async function runScore(args: ScoreArgs): Promise<ScoreOutput> {
	const checkpoint = await openModelFolder(args.model);
	const { config, files } = checkpoint;
	const adapter = args.adapter ? await readAdapterFolder(args.adapter, config) : undefined;

	let ids: number[];
	if (args.input.kind === 'ids') ids = args.input.ids;
	else {
		const tokenizer = Tokenizer.fromJson(
			files.tokenizerJson,
			files.tokenizerConfigJson,
			files.chatTemplate
		);
		if (args.input.kind === 'text') ids = tokenizer.encode(args.input.text);
		else {
			const { messages, options } = parseChatRequest(await readChatFile(args.input.file));
			ids = tokenizer.encodeChat(messages, options);
		}
	}
	if (ids.length === 0) throw new CliInputError('the input has no tokens: nothing to score');
	// Past the model's positions the logprobs mean nothing (and the activations may not fit):
	// refused here, before the GPU, with the model layer's typed error.
	if (ids.length > config.maxPositionEmbeddings)
		throw new ContextLengthError(ids.length, config.maxPositionEmbeddings, 0);
	const outside = ids.find((id) => id >= config.vocabSize);
	if (outside !== undefined)
		throw new CliInputError(
			`token id ${outside} is outside the model's vocabulary [0, ${config.vocabSize})`
		);

	const gpu = await acquireGpu();
	try {
		const model = await createModel(gpu, checkpoint, adapter);
		try {
			const { logprobs } = await model.scoreTokens([ids]);
			return {
				ids,
				logprobs: [null, ...Array.from(logprobs, (v) => (Number.isFinite(v) ? v : null))]
			};
		} finally {
			model.release();
		}
	} finally {
		gpu.destroy();
	}
}
