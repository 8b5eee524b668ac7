/**
 * @file The OpenAI-compatible surface for browser and Node alike: `openaiClient()`, the
 * ChatService behind it, and the response types with TabRL's `tabrl` token record. The
 * HTTP server (http-server.ts) is Node only and is imported from its own file.
 */
export { openaiClient, localFetch, LOCAL_BASE_URL } from './client';
export type { LocalClientOptions, OpenAIClientOptions } from './client';
export { ChatService } from './service';
export type { ChatServiceOptions, ServiceRequest, ServiceResponse } from './service-options';
export type { ChatEngine } from './engine';
export { OpenAIApiError } from './errors';
export type {
	TabrlChatCompletion,
	TabrlChatCompletionChunk,
	TabrlChoice,
	TabrlChoiceTokens
} from './response';
