/**
 * @file What a multi-turn rollout spends tokenizing: every turn of N random tic-tac-toe
 * games rendered and tokenized whole, as the service does per request, `uncached` (template
 * then @huggingface/tokenizers) beside `cached` (Tokenizer.encodeChat, cold per rep), ids
 * compared; Qwen3's tokenizer and the tic-tac-toe BPE. One JSON object.
 *
 *   npx tsx tools/bench/bench-tokenize.ts [--games 512] [--reps 3]
 */
import { Tokenizer as HfTokenizer } from '@huggingface/tokenizers';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { legalPlayTranscripts } from '../../src/lib/agent/envs/tictactoe/demonstrations';
import type { ChatMessage } from '../../src/lib/model/tokenizer/chat-messages';
import { Tokenizer } from '../../src/lib/model/tokenizer/tokenizer';
import { QWEN3_TOKENIZER_DIR } from '../../tests/helpers/qwen3-tokenizer';
import { median, option } from './bench-support';
import { MODEL_SIZES, writeTicTacToeModel } from '../../scripts/tictactoe-model';

const GAMES = Number(option('games') ?? 512);
const REPS = Number(option('reps') ?? 3);

interface Files {
	name: string;
	tokenizerJson: string;
	config: Record<string, unknown>;
}

async function ticTacToeFiles(): Promise<Files> {
	const dir = await mkdtemp(join(tmpdir(), 'bench-tokenize-'));
	try {
		await writeTicTacToeModel(dir, MODEL_SIZES.small);
		return {
			name: 'tictactoe-bpe',
			tokenizerJson: await readFile(join(dir, 'tokenizer.json'), 'utf8'),
			config: JSON.parse(await readFile(join(dir, 'tokenizer_config.json'), 'utf8'))
		};
	} finally {
		await rm(dir, { recursive: true, force: true });
	}
}

async function qwen3Files(): Promise<Files> {
	return {
		name: 'qwen3',
		tokenizerJson: await readFile(join(QWEN3_TOKENIZER_DIR, 'tokenizer.json'), 'utf8'),
		config: JSON.parse(await readFile(join(QWEN3_TOKENIZER_DIR, 'tokenizer_config.json'), 'utf8'))
	};
}

/** Every request of the games: the conversation up to each assistant turn. */
function requests(): ChatMessage[][] {
	const out: ChatMessage[][] = [];
	for (const game of legalPlayTranscripts(GAMES, 77)) {
		const messages = game.messages() as ChatMessage[];
		messages.forEach((m, i) => {
			if (m.role === 'assistant') out.push(messages.slice(0, i));
		});
	}
	return out;
}

function time(run: () => void): number {
	const t = performance.now();
	run();
	return performance.now() - t;
}

async function main() {
	const chats = requests();
	const results = [];
	for (const files of [await ticTacToeFiles(), await qwen3Files()]) {
		const config = { ...files.config, clean_up_tokenization_spaces: false };
		const hf = new HfTokenizer(JSON.parse(files.tokenizerJson), config);
		const uncached: number[] = [];
		const cached: number[] = [];
		let tokens = 0;
		let same = true;
		for (let rep = 0; rep <= REPS; rep++) {
			const ours = Tokenizer.fromJson(files.tokenizerJson, config);
			let a: number[][] = [];
			let b: number[][] = [];
			const u = time(
				() =>
					(a = chats.map(
						(m) =>
							hf.encode(ours.applyChatTemplate(m, { addGenerationPrompt: true }), {
								add_special_tokens: false
							}).ids
					))
			);
			const c = time(
				() => (b = chats.map((m) => ours.encodeChat(m, { addGenerationPrompt: true })))
			);
			same &&= a.every((ids, i) => ids.join() === b[i].join());
			tokens = a.reduce((n, ids) => n + ids.length, 0);
			if (rep > 0) {
				uncached.push(u);
				cached.push(c);
			}
			process.stderr.write(
				`[bench-tokenize] ${files.name} rep ${rep}: ${u.toFixed(0)} vs ${c.toFixed(0)} ms\n`
			);
		}
		const u = median(uncached);
		const c = median(cached);
		results.push({
			tokenizer: files.name,
			requests: chats.length,
			promptTokens: tokens,
			uncachedMs: +u.toFixed(1),
			cachedMs: +c.toFixed(1),
			uncachedMsPerRequest: +(u / chats.length).toFixed(4),
			cachedMsPerRequest: +(c / chats.length).toFixed(4),
			speedup: +(u / c).toFixed(2),
			sameIds: same
		});
	}
	console.log(
		JSON.stringify(
			{
				bench: 'tokenize',
				date: new Date().toISOString(),
				node: process.version,
				work: `${GAMES} tic-tac-toe games (legal random play), every turn's whole conversation; median of ${REPS} after a warm-up, each rep a fresh Tokenizer (cold cache); both sides render the chat template and tokenize it`,
				results
			},
			null,
			1
		)
	);
}

main().catch((e) => {
	process.stderr.write(String(e?.stack ?? e) + '\n');
	process.exit(1);
});
