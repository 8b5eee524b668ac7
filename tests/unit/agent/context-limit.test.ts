/**
 * A conversation outgrowing the context window ends the episode by the environment's rule,
 * never the run: through the REAL ChatService (400 `context_length_exceeded`) and the openai
 * package, with a scripted engine replying chosen tokens. 2048 resending the whole game in a
 * 600-token window ends 'context', scored as the board stands; inbox searching forever ends
 * out of turns.
 */
import { describe, expect, it } from 'vitest';
import * as game2048 from '../../../src/lib/agent/envs/game2048';
import * as inbox from '../../../src/lib/agent/envs/inbox';
import { isContextLimit } from '../../../src/lib/agent/context-limit';
import { openaiClient } from '../../../src/lib/serve/client';
import type { ChatEngine, EngineSequence } from '../../../src/lib/serve/engine';
import { ChatService } from '../../../src/lib/serve/service';
import { Tokenizer } from '../../../src/lib/model/tokenizer/tokenizer';
import { tinyTokenizer } from '../../../src/lib/testing/tiny-tokenizer';

/** A service whose engine replies `reply(promptText)` (then the end token) to every prompt. */
function scriptedClient(reply: (prompt: string) => string, contextLength: number) {
	const files = tinyTokenizer();
	const tok = Tokenizer.fromJson(
		files.tokenizerJson,
		files.tokenizerConfigJson,
		files.chatTemplate
	);
	const end = files.ids.imEnd;
	const engine: ChatEngine = {
		async generate(prompts, options): Promise<EngineSequence[]> {
			return prompts.map((p) => {
				const ids = [...tok.encode(reply(tok.decode(p))), end].slice(0, options.maxTokens);
				return {
					promptIds: [...p],
					ids,
					logprobs: ids.map(() => -0.1),
					finishReason: ids.at(-1) === end ? 'stop' : 'length'
				};
			});
		}
	};
	const service = new ChatService({
		engine,
		tokenizer: tok,
		model: 'scripted',
		contextLength,
		scheduler: { stopTokenIds: [end] }
	});
	return openaiClient({ service });
}

describe('a conversation past the context window', () => {
	it('is recognised from the openai package error', async () => {
		const client = scriptedClient(() => 'hi', 20);
		const error = await client.chat.completions
			.create({ model: 'scripted', messages: [{ role: 'user', content: 'x '.repeat(50) }] })
			.catch((e: unknown) => e);
		expect(isContextLimit(error)).toBe(true);
		expect(isContextLimit(new Error('other'))).toBe(false);
	});

	it('2048 with the whole history resent ends the game as "context", scored as the board stands', async () => {
		const client = scriptedClient((text) => {
			const boards = text.split('<|im_start|>user\n');
			const board = game2048.parseBoard(boards[boards.length - 1].split('<|im_end|>')[0]);
			return `<move>${game2048.expertMove(board!)}</move>`;
		}, 600);
		const t = await game2048.rollout(client, { model: 'scripted', seed: 3, maxTokens: 32 });
		expect(t.metadata.outcome).toBe('context');
		const moves = Number(t.metrics.num_moves);
		expect(moves).toBeGreaterThan(2);
		expect(moves).toBeLessThan(40);
		const final = JSON.parse(String(t.metadata.final_board));
		expect(t.reward).toBeCloseTo(game2048.reward(final, 128, false), 12);
		expect(t.reward).toBeGreaterThan(0);
		// every choice answered a board; the unanswered last board is not in the history
		const items = t.messagesAndChoices;
		expect(items.filter((m) => 'message' in m)).toHaveLength(moves);
		expect('message' in items[items.length - 1]).toBe(true);
		expect(game2048.replay(t).at(-1)).toMatchObject({
			kind: 'outcome',
			text: expect.stringContaining('context window')
		});
		// with a window of one earlier turn the same game goes on (each request stays small)
		const windowed = await game2048.rollout(client, {
			model: 'scripted',
			seed: 3,
			maxTokens: 32,
			historyTurns: 1
		});
		expect(windowed.metadata.outcome).not.toBe('context');
		expect(Number(windowed.metrics.num_moves)).toBeGreaterThan(moves);
	});

	it('inbox: a search loop that outgrows the window ends as out of turns (no answer)', async () => {
		const call =
			'<tool_call>\n{"name": "search_inbox", "arguments": {"keywords": ["invoice"]}}\n</tool_call>';
		const client = scriptedClient(() => call, 3000);
		const t = await inbox.rollout(client, {
			model: 'scripted',
			seed: 12,
			maxTurns: 50,
			maxTokens: 200
		});
		expect(t.metadata.outcome).toBe('out_of_turns');
		expect(t.logs).toContain('the conversation no longer fits the context window');
		expect(t.metrics.format_error).toBe(0);
		expect(Number(t.metrics.num_turns)).toBeLessThan(50);
		expect(Number(t.metrics.tool_calls)).toBeGreaterThan(0);
		expect(t.reward).toBeGreaterThanOrEqual(0);
		expect(t.reward).toBeLessThan(1);
	});
});
