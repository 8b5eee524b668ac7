/**
 * @file `cli serve`: a model folder as an OpenAI-compatible HTTP server.
 *
 *   serve --model DIR [--port N] [--host 127.0.0.1] [--name NAME] [--max-context N]
 *         [--api-key KEY] [--allowed-hosts a,b] [--max-requests N] [--max-tokens-in-flight N]
 *         [--request-timeout S]
 *
 * Prints {"listening", "model"} once listening (--port 0: a free port) and runs until
 * SIGINT or SIGTERM. Loopback by default; --api-key (or TABRL_API_KEY) requires a bearer
 * key; other Host names need --allowed-hosts. Long messages tokenize on a worker thread.
 */
import { basename, resolve } from 'node:path';
import { listenChatServer } from '../../src/lib/serve/node/http-server';
import { ChatService } from '../../src/lib/serve/service';
import { acquireGpu } from '../../src/lib/gpu/device';
import { Generator } from '../../src/lib/model/generate/generator';
import { Tokenizer } from '../../src/lib/model/tokenizer/tokenizer';
import { OffThreadPieceEncoder } from '../../src/lib/model/tokenizer/node/tokenizer-thread';
import { TransformerModel } from '../../src/lib/model/transformer/transformer';
import { CliInputError, parseFlags, UsageError } from './args';
import { openModelFolder } from './model-folder';

export const SERVE_USAGE =
	'usage: npm run -s cli -- serve --model DIR [--port N] [--host 127.0.0.1] [--name NAME] [--max-context N] ' +
	'[--api-key KEY] [--allowed-hosts a,b] [--max-requests N] [--max-tokens-in-flight N] [--request-timeout S]';

export interface ServeArgs {
	model: string;
	port: number;
	host: string;
	name?: string;
	maxContext?: number;
	/** Required as a Bearer token when set (--api-key, else env TABRL_API_KEY). */
	apiKey?: string;
	allowedHosts: string[];
	maxRequests: number;
	/** Default: MAX_CONTEXTS_IN_FLIGHT contexts. */
	maxTokensInFlight?: number;
	requestTimeoutS: number;
}

const DEFAULT_PORT = 8000;
/** Requests held at once (parsing, queued, decoding); more wait in the client (429). */
const DEFAULT_MAX_REQUESTS = 256;
/** Tokens in flight by default: this many full contexts (a GRPO group of 8-16 fits). */
const MAX_CONTEXTS_IN_FLIGHT = 64;
/** Longest a request may take (seconds), from arrival to its last token. */
const DEFAULT_REQUEST_TIMEOUT_S = 600;
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1']);

function parseCount(flag: string, text: string, min: number, max: number): number {
	const n = Number(text);
	if (text.trim() === '' || !Number.isSafeInteger(n) || n < min || n > max)
		throw new UsageError(`--${flag}: '${text}' is not an integer in [${min}, ${max}]`, SERVE_USAGE);
	return n;
}

export function parseServeArgs(argv: readonly string[]): ServeArgs {
	const flags = parseFlags(
		argv,
		{
			model: {},
			port: {},
			host: {},
			name: {},
			'max-context': {},
			'api-key': {},
			'allowed-hosts': {},
			'max-requests': {},
			'max-tokens-in-flight': {},
			'request-timeout': {}
		},
		SERVE_USAGE
	);
	if (flags.model === undefined) throw new UsageError('--model DIR is required', SERVE_USAGE);
	if (flags.name === '') throw new UsageError('--name is empty', SERVE_USAGE);
	const apiKey = flags['api-key'] ?? (process.env.TABRL_API_KEY || undefined);
	if (apiKey === '') throw new UsageError('--api-key is empty', SERVE_USAGE);
	return {
		model: flags.model,
		port: flags.port === undefined ? DEFAULT_PORT : parseCount('port', flags.port, 0, 65535),
		host: flags.host ?? '127.0.0.1',
		name: flags.name,
		maxContext:
			flags['max-context'] === undefined
				? undefined
				: parseCount('max-context', flags['max-context'], 2, 2 ** 24),
		apiKey,
		allowedHosts: (flags['allowed-hosts'] ?? '')
			.split(',')
			.map((h) => h.trim())
			.filter((h) => h !== ''),
		maxRequests:
			flags['max-requests'] === undefined
				? DEFAULT_MAX_REQUESTS
				: parseCount('max-requests', flags['max-requests'], 1, 1e6),
		maxTokensInFlight:
			flags['max-tokens-in-flight'] === undefined
				? undefined
				: parseCount('max-tokens-in-flight', flags['max-tokens-in-flight'], 1, 2 ** 40),
		requestTimeoutS:
			flags['request-timeout'] === undefined
				? DEFAULT_REQUEST_TIMEOUT_S
				: parseCount('request-timeout', flags['request-timeout'], 1, 7 * 24 * 3600)
	};
}

/** The warning printed when the server is reachable beyond loopback with no key, or null. */
export function exposureWarning({
	host,
	apiKey
}: Pick<ServeArgs, 'host' | 'apiKey'>): string | null {
	if (LOOPBACK.has(host) || apiKey !== undefined) return null;
	return (
		`tabrl serve: WARNING: listening on ${host}, beyond loopback, with NO API KEY: anyone who ` +
		'can reach this address can run the model. Give --api-key KEY (or TABRL_API_KEY), or ' +
		'bind --host 127.0.0.1.'
	);
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
			// A long message's text is tokenized on a thread (started at the first one).
			const pieceEncoder = new OffThreadPieceEncoder({
				tokenizerJson: files.tokenizerJson,
				tokenizerConfigJson: files.tokenizerConfigJson
			});
			try {
				const service = new ChatService({
					engine: generator,
					tokenizer,
					model: name,
					contextLength,
					scheduler: { stopTokenIds: config.eosTokenIds },
					admission: {
						maxRequests: args.maxRequests,
						maxTokens: args.maxTokensInFlight ?? MAX_CONTEXTS_IN_FLIGHT * contextLength
					},
					deadlineMs: args.requestTimeoutS * 1000,
					pieceEncoder,
					// standard answers: token ids only when asked (return_token_ids), as vLLM
					tokenRecords: false
				});
				const stopped = untilSignal();
				const server = await listenChatServer(service, {
					port: args.port,
					host: args.host,
					apiKey: args.apiKey,
					allowedHosts: args.allowedHosts
				}).catch((error: Error) => {
					throw new CliInputError(
						`cannot listen on ${args.host}:${args.port} (${error.message}); pick another --port or --host`
					);
				});
				const warning = exposureWarning(args);
				if (warning) process.stderr.write(warning + '\n');
				process.stdout.write(JSON.stringify({ listening: server.url, model: name }) + '\n');
				await stopped;
				await server.close();
			} finally {
				await pieceEncoder.close();
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
