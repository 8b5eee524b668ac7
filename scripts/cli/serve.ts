/**
 * @file `cli serve`: a model folder as an OpenAI-compatible HTTP server (node:http).
 *
 *   serve --model DIR [--port N] [--host 127.0.0.1] [--name NAME] [--max-context N]
 *
 * answers `POST /v1/chat/completions` (streamed with "stream": true) and `GET /v1/models`
 * (src/lib/agent/openai/http-server.ts). Once listening it prints ONE JSON line,
 * {"listening": "http://127.0.0.1:N", "model": NAME}, and runs until SIGINT or SIGTERM,
 * then closes the server, frees the GPU and exits 0 with nothing more on stdout. Requests
 * must name the model NAME (default: the folder's name). --port 0 picks a free port (the
 * printed line says which); the default is 8000. --max-context caps prompt + reply tokens
 * (default: the model's max_position_embeddings).
 *
 * Order of work, as `score`: flags, then the folder (every file problem before the GPU is
 * touched), then the GPU, then the port.
 */
import { basename, resolve } from 'node:path';
import { listenChatServer } from '../../src/lib/agent/openai/http-server';
import { ChatService } from '../../src/lib/agent/openai/service';
import { acquireGpu } from '../../src/lib/gpu/device';
import { Generator } from '../../src/lib/model/generation';
import { Tokenizer } from '../../src/lib/model/tokenizer';
import { TransformerModel } from '../../src/lib/model/transformer';
import { CliInputError, parseFlags, UsageError } from './args';
import { openModelFolder } from './model-folder';

export const SERVE_USAGE =
	'usage: npm run -s cli -- serve --model DIR [--port N] [--host 127.0.0.1] [--name NAME] [--max-context N]';

export interface ServeArgs {
	model: string;
	port: number;
	host: string;
	name?: string;
	maxContext?: number;
}

const DEFAULT_PORT = 8000;

function parseCount(flag: string, text: string, min: number, max: number): number {
	const n = Number(text);
	if (text.trim() === '' || !Number.isSafeInteger(n) || n < min || n > max)
		throw new UsageError(`--${flag}: '${text}' is not an integer in [${min}, ${max}]`, SERVE_USAGE);
	return n;
}

export function parseServeArgs(argv: readonly string[]): ServeArgs {
	const flags = parseFlags(
		argv,
		{ model: {}, port: {}, host: {}, name: {}, 'max-context': {} },
		SERVE_USAGE
	);
	if (flags.model === undefined) throw new UsageError('--model DIR is required', SERVE_USAGE);
	if (flags.name === '') throw new UsageError('--name is empty', SERVE_USAGE);
	return {
		model: flags.model,
		port: flags.port === undefined ? DEFAULT_PORT : parseCount('port', flags.port, 0, 65535),
		host: flags.host ?? '127.0.0.1',
		name: flags.name,
		maxContext:
			flags['max-context'] === undefined
				? undefined
				: parseCount('max-context', flags['max-context'], 2, 2 ** 24)
	};
}

/** Resolves once a signal asks to stop. */
function untilSignal(): Promise<NodeJS.Signals> {
	return new Promise((done) => {
		for (const s of ['SIGINT', 'SIGTERM'] as const) process.once(s, () => done(s));
	});
}

/**
 * Serves until SIGINT/SIGTERM. The listening line is written here (the CLI prints a
 * command's result only when it ends); the result is undefined, so nothing follows it.
 */
export async function runServe(args: ServeArgs): Promise<undefined> {
	const checkpoint = await openModelFolder(args.model);
	const { config, files } = checkpoint;
	const tokenizer = Tokenizer.fromJson(
		files.tokenizerJson,
		files.tokenizerConfigJson,
		files.chatTemplate
	);
	const name = args.name ?? basename(resolve(args.model));
	const contextLength = Math.min(
		config.maxPositionEmbeddings,
		args.maxContext ?? config.maxPositionEmbeddings
	);

	const gpu = await acquireGpu();
	try {
		const model = await TransformerModel.create(gpu, config, checkpoint.weights);
		try {
			const generator = new Generator(model, { maxContext: contextLength });
			try {
				const service = new ChatService({
					engine: generator,
					tokenizer,
					model: name,
					contextLength,
					scheduler: { stopTokenIds: config.eosTokenIds }
				});
				const stopped = untilSignal();
				const server = await listenChatServer(service, {
					port: args.port,
					host: args.host
				}).catch((error: Error) => {
					throw new CliInputError(
						`cannot listen on ${args.host}:${args.port} (${error.message}); pick another --port or --host`
					);
				});
				process.stdout.write(JSON.stringify({ listening: server.url, model: name }) + '\n');
				await stopped;
				await server.close();
			} finally {
				generator.release();
			}
		} finally {
			model.release();
		}
	} finally {
		gpu.destroy();
	}
	return undefined;
}
