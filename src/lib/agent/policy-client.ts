/**
 * @file A scripted policy speaking as a chat model: `policyClient(policy)` is an object with
 * the `client.chat.completions.create` an environment's rollout calls, answering each request
 * with the policy's reply instead of a model's. So a random or expert player goes through
 * exactly the rollout code a model does (the same prompts, rules, rewards and history
 * window), which is what `cli play` measures and what an SFT warm start imitates.
 *
 * A reply is text (`content`) or tool calls in OpenAI's shape (finish_reason 'tool_calls');
 * the choices carry no `tabrl` token record (nothing was sampled), so such trajectories are
 * for SFT and scoring, not for a GRPO step. Synchronous and free of I/O: thousands of games
 * per second.
 */
import type OpenAI from 'openai';
import type {
	ChatCompletion,
	ChatCompletionCreateParamsNonStreaming,
	ChatCompletionMessageParam,
	ChatCompletionTool
} from 'openai/resources/chat/completions';

export interface PolicyRequest {
	messages: ChatCompletionMessageParam[];
	tools?: ChatCompletionTool[];
}

/** One call: `arguments` is a JSON string, as OpenAI sends it. */
export interface PolicyToolCall {
	name: string;
	arguments: string;
}

export type PolicyReply = { content: string } | { content?: string; toolCalls: PolicyToolCall[] };

export type Policy = (request: PolicyRequest) => PolicyReply;

/** The chat completion of one reply (choice 0, as every environment reads it). */
export function policyCompletion(reply: PolicyReply, model: string, turn: number): ChatCompletion {
	const calls = 'toolCalls' in reply ? reply.toolCalls : [];
	return {
		id: `chatcmpl-policy-${turn}`,
		object: 'chat.completion',
		created: 0,
		model,
		choices: [
			{
				index: 0,
				finish_reason: calls.length ? 'tool_calls' : 'stop',
				logprobs: null,
				message: {
					role: 'assistant',
					content: reply.content ?? null,
					refusal: null,
					...(calls.length
						? {
								tool_calls: calls.map((c, i) => ({
									id: `call_${turn}_${i}`,
									type: 'function' as const,
									function: { name: c.name, arguments: c.arguments }
								}))
							}
						: {})
				}
			}
		]
	};
}

/**
 * The policy behind the subset of the OpenAI client that rollouts use. (Typed as OpenAI so
 * a rollout takes it where it takes a model's client; any other method is absent.)
 */
export function policyClient(policy: Policy, model = 'policy'): OpenAI {
	let turn = 0;
	const create = async (
		body: ChatCompletionCreateParamsNonStreaming,
		options?: { signal?: AbortSignal }
	): Promise<ChatCompletion> => {
		options?.signal?.throwIfAborted();
		const reply = policy({ messages: body.messages, tools: body.tools });
		return policyCompletion(reply, body.model || model, turn++);
	};
	return { chat: { completions: { create } } } as unknown as OpenAI;
}
