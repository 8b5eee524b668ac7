/**
 * @file The inbox environment's rollout, ART-E in miniature: `rollout(client, options)`
 * answers one question about a generated mailbox through an OpenAI client (the local
 * `openaiClient()`, a `policyClient`, or any other) and returns its Trajectory.
 *
 * The conversation is one growing history: the system prompt, the question as the user's
 * message, then per turn the model's reply (a choice, trained) and one tool message per tool
 * call it made (context). Each request sends `tools` (TOOLS, also set as `trajectory.tools`)
 * and reads choice 0; the model's `<tool_call>` blocks arrive parsed as
 * `choice.message.tool_calls` (the OpenAI service parses them). The rules — what ends an
 * episode, what is an error text — are episode.ts's; the reward is reward.ts's.
 *
 * The scenario seed fixes the mailbox and the question (questions.ts); the model's sampling
 * has its own `seed` in `request`, and turn t samples with seed + t (as tic-tac-toe does).
 */
import type OpenAI from 'openai';
import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import { turnRequest } from '../turn-request';
import { isContextLimit } from '../../context-limit';
import { Trajectory } from '../../trajectory';
import { InboxEpisode, MAX_TURNS } from './episode';
import { scenario as scenarioOf, type Scenario } from './questions';
import { TOOLS } from './tools';

/** The system prompt (the same for every question; the question is the user's message). */
export const SYSTEM_PROMPT =
	'You are an email assistant. Answer the question with the tools: search the inbox with ' +
	'keywords from the question, read the email that holds the answer, then call ' +
	'return_final_answer with a short answer and the message id of that email. If you cannot ' +
	"find it, answer I don't know.";

/** Request fields passed through to every chat completion (temperature, seed, ...). */
export type RequestExtras = Omit<
	Partial<ChatCompletionCreateParamsNonStreaming>,
	'model' | 'messages' | 'n' | 'stream' | 'tools'
> &
	Record<string, unknown>;

export interface InboxOptions {
	/** The model name sent with each request. */
	model: string;
	/** The scenario seed: the mailbox and the question (questions.ts). */
	seed: number;
	/** Model turns at most (default 6). */
	maxTurns?: number;
	/** The mailbox's share of changed emails (default 0: questions of one email only). */
	changes?: number;
	/** max_completion_tokens of each reply (default 128). */
	maxTokens?: number;
	request?: RequestExtras;
	signal?: AbortSignal;
}

/** The trajectory's opening: system prompt, question, tools, and metadata of the scenario. */
export function startTrajectory(s: Scenario): Trajectory {
	return new Trajectory({
		messagesAndChoices: [
			{ role: 'system', content: SYSTEM_PROMPT },
			{ role: 'user', content: s.question }
		],
		tools: TOOLS,
		metadata: {
			environment: 'inbox',
			seed: s.seed,
			mailbox_seed: s.mailboxSeed,
			kind: s.kind,
			question: s.question,
			expected_answer: s.answer,
			expected_message_ids: s.messageIds.join(' ')
		}
	});
}

/** Writes an ended episode's reward, metrics and outcome into its trajectory. */
export function finishTrajectory(trajectory: Trajectory, episode: InboxEpisode): Trajectory {
	trajectory.reward = episode.reward();
	Object.assign(trajectory.metrics, episode.metrics());
	const outcome = episode.outcome();
	trajectory.metadata.outcome = outcome;
	trajectory.metadata.final_answer = episode.answer;
	trajectory.metadata.reference_message_ids = episode.references.join(' ');
	trajectory.metadata.format_error = episode.rubric.formatError;
	if (episode.formatDetail) trajectory.log(`format error: ${episode.formatDetail}`);
	trajectory.log(`${outcome}: reward ${trajectory.reward}`);
	return trajectory;
}

/** Plays one episode; the trajectory's reward, metrics and metadata say how it went. */
export async function rollout(client: OpenAI, options: InboxOptions): Promise<Trajectory> {
	const { model, seed, maxTurns = MAX_TURNS, maxTokens = 128, request = {}, signal } = options;
	const s = scenarioOf(seed, { changes: options.changes });
	const episode = new InboxEpisode(s, maxTurns);
	const trajectory = startTrajectory(s);
	for (let turn = 0; !episode.done; turn++) {
		let completion;
		try {
			completion = await client.chat.completions.create(
				{
					...turnRequest(request, turn),
					model,
					messages: trajectory.messages(),
					tools: TOOLS,
					max_completion_tokens: maxTokens
				},
				{ signal }
			);
		} catch (error) {
			if (!isContextLimit(error)) throw error;
			episode.outOfContext();
			trajectory.log('the conversation no longer fits the context window');
			break;
		}
		const choice = completion.choices[0];
		trajectory.messagesAndChoices.push(choice);
		trajectory.messagesAndChoices.push(...episode.step(choice.message));
	}
	return finishTrajectory(trajectory, episode);
}
