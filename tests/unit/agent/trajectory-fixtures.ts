/**
 * Choices and trajectories made by hand for the agent-layer tests: a choice in the shape the
 * local OpenAI client returns (OpenAI's ChatCompletion.Choice plus `tabrl`), with the token
 * ids and logprobs a test wants to see come out of the training view.
 */
import type { Choice, Message } from '../../../src/lib/agent/trajectory';

/** A choice whose sampled ids are `ids`, each with logprob -0.1 * (its position + 1). */
export function choice(promptIds: number[], ids: number[], content = 'reply'): Choice {
	return {
		index: 0,
		finish_reason: 'stop',
		logprobs: null,
		message: { role: 'assistant', content, refusal: null },
		tabrl: { prompt_ids: promptIds, ids, logprobs: ids.map((_, i) => -0.1 * (i + 1)) }
	};
}

export const system = (content: string): Message => ({ role: 'system', content });
export const user = (content: string): Message => ({ role: 'user', content });
