/**
 * @file The host's share of a tic-tac-toe GRPO step's rollouts, no GPU: 512 games (ART's
 * random opponent) played through the same path as training (openai client -> ChatService:
 * request checks, chat template, tokenizer, scheduler, response -> the game), with an
 * instant stub engine that answers each prompt with a legal move (the first empty square of
 * the board in its last user message); the stub's own time (decoding the board from ids) is
 * taken out. Two clients, interleaved rep by rep: `sdk` (every request through the openai
 * package over localFetch, as before) and `local` (openaiClient: a whole completion skips
 * the HTTP framing). A warm-up rep each, then median, min and max of --reps; one JSON object.
 * --env 2048: 2048's games instead (the preset's options: the board alone each turn, to 128;
 * its bundled model's tokenizer), the stub moving left, down, right, up in turn, so a game is
 * ~100 short requests, as the page's 2048 rollouts are.
 *
 *   npx tsx tools/bench/bench-host.ts [--env tictactoe|2048] [--games 512] [--reps 3] [--clients sdk,local] [--model-dir DIR]
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ENVIRONMENTS } from '../../src/lib/agent/envs/registry';
import { squareName } from '../../src/lib/agent/envs/tictactoe/rules';
import { Tokenizer } from '../../src/lib/model/tokenizer/tokenizer';
import type { ChatEngine, EngineSequence } from '../../src/lib/serve/engine';
import OpenAI from 'openai';
import { LOCAL_BASE_URL, localFetch, openaiClient } from '../../src/lib/serve/client';
import { ChatService } from '../../src/lib/serve/service';
import { playGames } from '../../src/lib/run/play';
import { option } from './bench-support';
import { writeBundledModel } from '../../scripts/default-model';
import { cpus } from 'node:os';

const ENV_OPTION = option('env') ?? 'tictactoe';
if (ENV_OPTION !== 'tictactoe' && ENV_OPTION !== '2048')
	throw new Error(`--env tictactoe or 2048, not ${ENV_OPTION}`);
const ENV: 'tictactoe' | '2048' = ENV_OPTION;
const GAMES = Number(option('games') ?? (ENV === '2048' ? 160 : 512));
const REPS = Number(option('reps') ?? 3);
/** Which clients to run (one alone for a CPU profile of its path). */
const CLIENTS = (option('clients') ?? 'sdk,local').split(',') as ClientName[];
/** The environment's bundled model's tokenizer (run from the repository root; written from
 * its seed if absent). */
const BUNDLED = ENVIRONMENTS[ENV].recipe.bundledModel;
const MODEL_DIR = option('model-dir') ?? join(process.cwd(), 'static/models', BUNDLED);
if (!option('model-dir')) await writeBundledModel(BUNDLED, MODEL_DIR);

const tokenizer = Tokenizer.fromJson(
	await readFile(join(MODEL_DIR, 'tokenizer.json'), 'utf8'),
	await readFile(join(MODEL_DIR, 'tokenizer_config.json'), 'utf8')
);
const config = JSON.parse(await readFile(join(MODEL_DIR, 'config.json'), 'utf8')) as {
	eos_token_id: number | number[];
};
const eos = [config.eos_token_id].flat();
const replyIds = (move: string) => [...tokenizer.encode(`<move>${move}</move>`), eos[0]];
/** A move's reply for each square, row-major. */
const moveIds = Array.from({ length: 9 }, (_, i) => replyIds(squareName(i)));
const slideIds = (['left', 'down', 'right', 'up'] as const).map(replyIds);

/** Tic-tac-toe's reply: the first empty square of the board in the prompt's last user
 * message (rows "A  x | _ | o", rules.ts renderBoard). */
function ticTacToeReply(ids: readonly number[]): number[] {
	const text = tokenizer.decode([...ids.slice(-80)]);
	const rows = text
		.split('\n')
		.filter((l) => /^[A-C] /.test(l))
		.slice(-3);
	const cells = rows.flatMap((r) =>
		r
			.slice(1)
			.split('|')
			.map((c) => c.trim())
	);
	return moveIds[Math.max(0, cells.indexOf('_'))];
}

/** Stub time, calls and prompts seen. */
const stub = { ms: 0, calls: 0, prompts: 0, promptTokens: 0 };
const engine: ChatEngine = {
	contextLength: 512,
	generate: async (prompts) => {
		const t0 = performance.now();
		stub.calls++;
		const out: EngineSequence[] = prompts.map((ids) => {
			stub.prompts++;
			stub.promptTokens += ids.length;
			const move = ENV === '2048' ? slideIds[stub.prompts % 4] : ticTacToeReply(ids);
			return {
				promptIds: [...ids],
				ids: move,
				logprobs: move.map(() => -0.1),
				finishReason: 'stop'
			};
		});
		stub.ms += performance.now() - t0;
		return out;
	}
};

const service = new ChatService({
	engine,
	tokenizer,
	model: 'stub',
	contextLength: 512,
	scheduler: { stopTokenIds: eos }
});
const clients = {
	sdk: new OpenAI({
		apiKey: 'x',
		baseURL: LOCAL_BASE_URL,
		maxRetries: 0,
		fetch: localFetch(service),
		dangerouslyAllowBrowser: true
	}),
	local: openaiClient({ service })
};
type ClientName = keyof typeof clients;
for (const name of CLIENTS)
	if (!(name in clients))
		throw new Error(`--clients: sdk and/or local, comma-separated; not ${name}`);

interface Rep {
	wallMs: number;
	stubMs: number;
	hostMs: number;
	requests: number;
	promptTokens: number;
	meanMoves: number;
	illegal: number;
}
async function rep(name: ClientName, seed: number): Promise<Rep> {
	Object.assign(stub, { ms: 0, calls: 0, prompts: 0, promptTokens: 0 });
	const t0 = performance.now();
	const environment = ENVIRONMENTS[ENV];
	const games = await playGames(environment, clients[name], 'stub', {
		games: GAMES,
		seed,
		temperature: 1,
		maxTokens: 16,
		seeded: true,
		envOptions: environment.recipe.envOptions
	});
	const wallMs = performance.now() - t0;
	return {
		wallMs,
		stubMs: stub.ms,
		hostMs: wallMs - stub.ms,
		requests: stub.prompts,
		promptTokens: stub.promptTokens,
		meanMoves: games.reduce((s, g) => s + Number(g.metrics.num_moves ?? 0), 0) / games.length,
		illegal: games.filter((g) => g.metrics.invalid_move === 1).length
	};
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const stat = (xs: number[]) => ({ median: median(xs), min: Math.min(...xs), max: Math.max(...xs) });
const runs: Record<ClientName, Rep[]> = { sdk: [], local: [] };
for (let r = 0; r <= REPS; r++)
	for (const name of CLIENTS) {
		const result = await rep(name, 1000 * r); // the same games for both clients
		if (r > 0) runs[name].push(result); // rep 0 warms up: template compiled, pieces cached
	}
const summary = (xs: Rep[]) => ({
	requests: xs[0].requests,
	promptTokens: xs[0].promptTokens,
	meanMoves: xs[0].meanMoves,
	illegal: xs[0].illegal,
	hostMs: stat(xs.map((x) => x.hostMs)),
	stubMs: stat(xs.map((x) => x.stubMs)),
	hostUsPerRequest: (median(xs.map((x) => x.hostMs)) * 1000) / xs[0].requests
});
const ran = (name: ClientName) => (runs[name].length ? summary(runs[name]) : undefined);
const sdk = ran('sdk');
const local = ran('local');
console.log(
	JSON.stringify({
		bench: 'host',
		env: ENV,
		cpu: cpus()[0]?.model,
		cores: cpus().length,
		node: process.version,
		games: GAMES,
		reps: REPS,
		sdk,
		local,
		ratio: sdk && local ? sdk.hostMs.median / local.hostMs.median : undefined
	})
);
