/**
 * @file The prompt of a chat request: its normalized messages and tools rendered with the
 * model's chat template (chat-template.ts, as transformers' apply_chat_template with
 * add_generation_prompt=True) and tokenized with nothing added (Tokenizer.encodeChat), then
 * checked against the context window: the prompt and at least one new token must fit;
 * max_tokens past what is left is an error (as OpenAI's), and when not given it is what is
 * left. The model layer's
 * errors (template refused the messages, no template) become 400s in errors.ts.
 */
import type { ChatMessage, ToolSchema } from '../../model/chat-messages';
import type { ChatTemplateOptions } from '../../model/chat-template';
import { invalidRequest } from './errors';
import type { ChatRequest } from './request';

/** What prompt building needs of a Tokenizer (src/lib/model/tokenizer.ts). */
export interface ChatEncoding {
	encodeChat(messages: ChatMessage[], opts?: ChatTemplateOptions): number[];
}

export interface Prompt {
	ids: number[];
	/** New tokens per choice at most. */
	maxTokens: number;
}

/** The template options of a request (tools only when tool_choice is not 'none'). */
export function templateOptions(
	tools: ToolSchema[] | undefined,
	chatTemplateKwargs: Record<string, unknown>
): ChatTemplateOptions {
	return { tools, addGenerationPrompt: true, vars: chatTemplateKwargs };
}

export function buildPrompt(
	tokenizer: ChatEncoding,
	request: Pick<ChatRequest, 'messages' | 'tools' | 'chatTemplateKwargs' | 'maxTokens'>,
	contextLength: number
): Prompt {
	const ids = tokenizer.encodeChat(
		request.messages,
		templateOptions(request.tools, request.chatTemplateKwargs)
	);
	const room = contextLength - ids.length;
	if (room < 1)
		throw invalidRequest(
			`This model's maximum context length is ${contextLength} tokens. However, your messages ` +
				`resulted in ${ids.length} tokens, which leaves no room for a reply. Please reduce ` +
				'the length of the messages.',
			'messages',
			'context_length_exceeded'
		);
	if (request.maxTokens !== undefined && request.maxTokens > room)
		throw invalidRequest(
			`This model's maximum context length is ${contextLength} tokens. However, you requested ` +
				`${ids.length + request.maxTokens} tokens (${ids.length} in the messages, ` +
				`${request.maxTokens} in the completion). Please reduce the length of the messages ` +
				'or the completion.',
			'messages',
			'context_length_exceeded'
		);
	return { ids, maxTokens: request.maxTokens ?? room };
}
