/**
 * @file SFT conversations -> token sequences with the assistant turns trained. Each turn
 * is located by rendering the template twice (before it with the generation prompt, and up
 * to it); the tokens between are trained, as transformers' `return_assistant_tokens_mask`
 * marks them. A template that does not render a chat as a prefix of its continuation
 * (Qwen3 drops earlier reasoning) is refused for that conversation (SftDataError).
 */
import type { ChatMessage, ToolSchema } from '../../model/tokenizer/chat-messages';
import type { ChatTemplateOptions } from '../../model/tokenizer/chat-template';
import { normalizeMessages, normalizeTools } from '../../serve/request-messages';
import { AgentError } from '../errors';
import type { TrainSequence } from '../to-train';
import type { SftConversation } from './types';

export interface ChatTokenizer {
	encodeChat(messages: ChatMessage[], opts?: ChatTemplateOptions): number[];
}

function startsWith(ids: readonly number[], prefix: readonly number[]): boolean {
	return prefix.length <= ids.length && prefix.every((id, i) => ids[i] === id);
}

/** The sequence of one conversation; `index` names it in errors. */
export function sftSequence(
	tokenizer: ChatTokenizer,
	conversation: SftConversation,
	index = 0
): TrainSequence {
	const where = `SFT conversation ${index}`;
	let messages: ChatMessage[];
	let tools: ToolSchema[] | undefined;
	try {
		messages = normalizeMessages(conversation.messages);
		tools = normalizeTools(conversation.tools);
	} catch (error) {
		throw new AgentError('sft-data', `${where}: ${(error as Error).message}`);
	}
	const render = (upTo: number, addGenerationPrompt: boolean) =>
		tokenizer.encodeChat(messages.slice(0, upTo), { tools, addGenerationPrompt });
	const ids = render(messages.length, false);
	const trainMask = new Uint8Array(ids.length);
	let assistantTurns = 0;
	messages.forEach((m, i) => {
		if (m.role !== 'assistant') return;
		assistantTurns++;
		const start = render(i, true);
		const end = render(i + 1, false);
		if (!startsWith(end, start) || !startsWith(ids, end))
			throw new AgentError(
				'sft-data',
				`${where}: the chat template does not render message ${i} as a continuation of the ` +
					'messages before it, so its tokens cannot be located; SFT needs a template that ' +
					'renders each conversation as a prefix of its continuation.'
			);
		trainMask.fill(1, start.length, end.length);
	});
	if (assistantTurns === 0)
		throw new AgentError('no-trainable-choice', `${where} has no assistant message to train.`);
	return {
		ids,
		trainMask,
		rolloutLogprobs: new Float32Array(ids.length).fill(NaN),
		advantage: 0,
		groupIndex: 0,
		trajectoryIndex: index,
		spans: []
	};
}

/** Deterministic Fisher-Yates with a 32-bit LCG (SFT epochs' order). */
export function shuffled<T>(items: readonly T[], seed: number): T[] {
	const out = [...items];
	let s = seed >>> 0;
	for (let i = out.length - 1; i > 0; i--) {
		s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
		const j = s % (i + 1);
		[out[i], out[j]] = [out[j], out[i]];
	}
	return out;
}
