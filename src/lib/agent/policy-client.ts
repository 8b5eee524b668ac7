/**
 * @file `policyClient(policy)`: a scripted policy behind `client.chat.completions.create`,
 * so a random or expert player runs exactly the rollout code a model does (what `cli play`
 * measures, what an SFT warm start imitates). Replies are text or tool calls; choices carry
 * no `tabrl` record, so such trajectories are for SFT and scoring, not GRPO. Synchronous.
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
