/**
 * @file The smallest environment that shows learning: the model is asked for a word and
 * rewarded by the share of its reply's characters that are letters a to m (rules.ts). One
 * short turn, so a tiny model learns it in a dozen GRPO steps even on a CPU-emulated GPU
 * (the CI learning test and the page's quick demo use it); tic-tac-toe is the real game.
 */
import type OpenAI from 'openai';
import { Trajectory } from '../../trajectory';
import { lettersReward, PROMPT } from './rules';

export interface LettersOptions {
	model: string;
	/** Sampling seed of the request. */
	seed?: number;
	/** Reply tokens at most (default 4). */
	maxTokens?: number;
	temperature?: number;
	/** Ask for the reply's token texts and logprobs (the choice's `logprobs`). */
	logprobs?: boolean;
}

export async function rollout(client: OpenAI, options: LettersOptions): Promise<Trajectory> {
	const messages = [{ role: 'user' as const, content: PROMPT }];
	const completion = await client.chat.completions.create({
		model: options.model,
		messages,
		max_tokens: options.maxTokens ?? 4,
		temperature: options.temperature ?? 1,
		seed: options.seed,
		...(options.logprobs ? { logprobs: true } : {})
	});
	const choice = completion.choices[0];
	const reward = lettersReward(choice.message.content ?? '');
	return new Trajectory({
		messagesAndChoices: [...messages, choice],
		reward,
		metadata: { environment: 'letters' }
	});
}
