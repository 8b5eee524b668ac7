/**
 * SFT sequences: which tokens of a rendered conversation are trained. With the fixtures'
 * ChatML template, the trained tokens of each assistant turn decode to exactly its content,
 * the end-of-turn marker and the newline after it; system and user turns are context. A
 * template that re-renders earlier turns (Qwen3 drops an earlier reply's reasoning) cannot
 * place the reply and is refused with kind 'sft-data'; a conversation with no reply has
 * nothing to train ('no-trainable-choice').
 */
import { describe, expect, it } from 'vitest';
import { AgentError } from '../../../../src/lib/agent/errors';
import { sftSequence } from '../../../../src/lib/agent/backend/sft-sequences';
import { makeFixture } from '../../../../src/lib/testing/fixtures';
import { Tokenizer } from '../../../../src/lib/model/tokenizer/tokenizer';
import { qwen3Tokenizer } from '../../../helpers/qwen3-tokenizer';

function fixtureTokenizer(): Tokenizer {
	const files = makeFixture('llama', { seed: 5 }).files;
	const text = (name: string) => files.get(name) as string | undefined;
	return Tokenizer.fromJson(
		text('tokenizer.json')!,
		text('tokenizer_config.json')!,
		text('chat_template.jinja')
	);
}

/** The trained tokens, decoded run by run. */
function trainedRuns(tokenizer: Tokenizer, ids: number[], mask: Uint8Array): string[] {
	const runs: string[] = [];
	let run: number[] = [];
	ids.forEach((id, t) => {
		if (mask[t]) run.push(id);
		else if (run.length) {
			runs.push(tokenizer.decode(run));
			run = [];
		}
	});
	if (run.length) runs.push(tokenizer.decode(run));
	return runs;
}

describe('sftSequence', () => {
	it('trains every assistant turn and nothing else (ChatML)', () => {
		const tokenizer = fixtureTokenizer();
		const s = sftSequence(tokenizer, {
			messages: [
				{ role: 'system', content: 'you are a helpful assistant.' },
				{ role: 'user', content: 'hello there' },
				{ role: 'assistant', content: 'hello world' },
				{ role: 'user', content: 'the answer?' },
				{ role: 'assistant', content: 'the dog ran in the park.' }
			]
		});
		expect(s.ids).toEqual(
			tokenizer.encodeChat(
				[
					{ role: 'system', content: 'you are a helpful assistant.' },
					{ role: 'user', content: 'hello there' },
					{ role: 'assistant', content: 'hello world' },
					{ role: 'user', content: 'the answer?' },
					{ role: 'assistant', content: 'the dog ran in the park.' }
				],
				{ addGenerationPrompt: false }
			)
		);
		expect(trainedRuns(tokenizer, s.ids, s.trainMask)).toEqual([
			'hello world<|im_end|>\n',
			'the dog ran in the park.<|im_end|>\n'
		]);
		expect(s.trainMask[0]).toBe(0);
		expect(s.advantage).toBe(0);
		expect(Array.from(s.rolloutLogprobs).every(Number.isNaN)).toBe(true);
	});

	it('refuses a conversation without a reply, and malformed messages', () => {
		const tokenizer = fixtureTokenizer();
		const kind = (f: () => unknown) => {
			try {
				f();
			} catch (e) {
				return e instanceof AgentError ? e.kind : 'untyped';
			}
			return 'none';
		};
		expect(
			kind(() => sftSequence(tokenizer, { messages: [{ role: 'user', content: 'hi' }] }))
		).toBe('no-trainable-choice');
		expect(kind(() => sftSequence(tokenizer, { messages: 'hello' as never }))).toBe('sft-data');
	});

	it('refuses a template that re-renders an earlier reply (Qwen3 drops its reasoning)', () => {
		const tokenizer = qwen3Tokenizer();
		const conversation = {
			messages: [
				{ role: 'user' as const, content: 'one' },
				{ role: 'assistant' as const, content: '<think>\nhmm\n</think>\n\nfirst' },
				{ role: 'user' as const, content: 'two' },
				{ role: 'assistant' as const, content: 'second' }
			]
		};
		expect(() => sftSequence(tokenizer, conversation, 3)).toThrow(/SFT conversation 3/);
		// The last reply alone (no earlier reasoning to drop) is placed.
		const single = sftSequence(tokenizer, { messages: conversation.messages.slice(2) });
		expect(trainedRuns(tokenizer, single.ids, single.trainMask).join('')).toContain('second');
	});
});
