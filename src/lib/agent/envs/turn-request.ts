/**
 * @file The request fields a multi-turn environment passes through to each of its chat
 * completions (temperature, seed, ...), and the seed of each turn: a seeded game samples turn
 * t with seed + t, since one seed on every turn would give each turn the same random draws.
 */
import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';

/** Request fields passed through to every chat completion (temperature, seed, ...). */
export type RequestExtras = Omit<
	Partial<ChatCompletionCreateParamsNonStreaming>,
	'model' | 'messages' | 'n' | 'stream'
> &
	Record<string, unknown>;

/** `request` for turn `turn` of a game: its seed (if any) advanced by the turn. */
export function turnRequest<R extends RequestExtras>(request: R, turn: number): R {
	return typeof request.seed === 'number' ? { ...request, seed: request.seed + turn } : request;
}
