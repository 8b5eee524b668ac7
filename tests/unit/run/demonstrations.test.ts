/**
 * The environments' demonstrations as SFT reads them (ENVIRONMENTS[env].demonstrations,
 * then TrainableModel.trainSft's conversations, then sft-sequences.ts with the tiny models'
 * chat template): 2048 gives one conversation per move (ART's prompt and one board, the
 * history window of the preset), inbox one episode with its tools; in each, the trained tokens
 * are exactly the expert's replies (move or tool-call blocks) and their end tokens, and the
 * same seed gives the same demonstrations.
 */
import { describe, expect, it } from 'vitest';
import { sftSequence } from '../../../src/lib/agent/backend/sft-sequences';
import * as game2048 from '../../../src/lib/agent/envs/game2048';
import { historyMessages } from '../../../src/lib/agent/trajectory';
import { Tokenizer } from '../../../src/lib/model/tokenizer/tokenizer';
import { ENVIRONMENTS, preset } from '../../../src/lib/run';
import { tinyTokenizer } from '../../../src/lib/testing/tiny-tokenizer';

const files = tinyTokenizer();
const tok = Tokenizer.fromJson(files.tokenizerJson, files.tokenizerConfigJson, files.chatTemplate);
const trainedText = (ids: number[], mask: Uint8Array) =>
	tok.decode(ids.filter((_, i) => mask[i] === 1));

describe('demonstrations as SFT reads them', () => {
	it('2048: one conversation per move, the move alone trained', async () => {
		const options = preset('2048').envOptions!;
		const demos = await ENVIRONMENTS['2048'].demonstrations!(150, 50, options);
		expect(demos).toHaveLength(150);
		for (const d of demos) {
			expect(d.histories()).toHaveLength(1);
			const messages = historyMessages(d.messagesAndChoices);
			// system prompt, one board, one move (history window 0)
			expect(messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant']);
			expect(messages[0].content).toBe(game2048.SYSTEM_PROMPT);
			const seq = sftSequence(tok, { messages });
			expect(trainedText(seq.ids, seq.trainMask)).toMatch(
				/^<move>(left|right|up|down)<\/move><\|im_end\|>\n?$/
			);
		}
		// the expert changes direction (not one reply learned by heart)
		const moves = new Set(
			demos.map((d) => String(historyMessages(d.messagesAndChoices)[2].content))
		);
		expect(moves.size).toBeGreaterThanOrEqual(3);
		const again = await ENVIRONMENTS['2048'].demonstrations!(150, 50, options);
		expect(again.map((d) => d.messages())).toEqual(demos.map((d) => d.messages()));
	});

	it('inbox: whole episodes with their tools, each tool-call reply trained, tool results not', async () => {
		const demos = await ENVIRONMENTS.inbox.demonstrations!(20, 50, {});
		expect(demos).toHaveLength(20);
		for (const d of demos) {
			const messages = d.messages();
			expect(d.tools?.map((t) => (t.type === 'function' ? t.function.name : ''))).toEqual([
				'search_inbox',
				'read_email',
				'return_final_answer'
			]);
			expect(messages.map((m) => m.role)).toEqual([
				'system',
				'user',
				'assistant',
				'tool',
				'assistant',
				'tool',
				'assistant'
			]);
			const seq = sftSequence(tok, { messages, tools: d.tools ?? undefined });
			const trained = trainedText(seq.ids, seq.trainMask);
			expect(trained.match(/<tool_call>/g)).toHaveLength(3);
			for (const name of ['search_inbox', 'read_email', 'return_final_answer'])
				expect(trained).toContain(`"name": "${name}"`);
			// no tool result is trained: the results' JSON keys are context only
			expect(trained).not.toContain('"subject"');
			expect(trained).not.toContain('"body"');
			expect(d.reward).toBeGreaterThan(1);
		}
	});
});
