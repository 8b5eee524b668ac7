/**
 * @file The rules of one inbox episode, as a synchronous state machine: `step(reply)` takes
 * one assistant message, runs its tool calls and returns the tool messages to append. The
 * rollout (rollout.ts) feeds it the model's replies; the corpus (demonstrations.ts) feeds it
 * a policy's directly. Bad input is a rule, never a crash (ART-E's shape):
 *
 * - a reply with no tool call (plain text, or a <tool_call> block the service could not
 *   parse, which stays in the text): format error "no_tool_call", the episode ends;
 * - a call of a tool not in TOOLS: format error "unknown_tool", the episode ends;
 * - arguments that are not a JSON object, or miss a required property, or have one of the
 *   wrong type: format error "bad_arguments", the episode ends;
 * - read_email of an id no email has: not a format error; the tool result is an error text
 *   ({"error": "no email with id m1234"}), the episode goes on and loses the
 *   "no invalid read" partial credit;
 * - a search that matches nothing: `[]`, the episode goes on;
 * - several calls in one reply: run in order, each answered by its own tool message; a
 *   format error or return_final_answer stops there (later calls are not run);
 * - text next to tool calls is ignored;
 * - maxTurns replies without a final answer: out of turns, the episode ends (no answer);
 * - a conversation that no longer fits the model's context window (`outOfContext`): the
 *   same as out of turns (no answer, no format error).
 */
import type {
	ChatCompletionMessageToolCall,
	ChatCompletionToolMessageParam
} from 'openai/resources/chat/completions';
import type { Metrics } from '../../trajectory';
import type { Mailbox } from './mailbox';
import { mailboxOf, type Scenario } from './questions';
import {
	answerIsCorrect,
	emptyRubric,
	inboxReward,
	isIDontKnow,
	type FormatError,
	type Rubric
} from './reward';
import { indexOf, type InboxIndex } from './search';
import { checkCall, readEmail, searchInbox } from './tools';

/** Model turns an episode allows unless told otherwise. */
export const MAX_TURNS = 6;

/** The part of an assistant message the rules read. */
export interface ReplyMessage {
	content?: string | null;
	tool_calls?: ChatCompletionMessageToolCall[];
}

export class InboxEpisode {
	readonly scenario: Scenario;
	readonly mailbox: Mailbox;
	readonly index: InboxIndex;
	readonly maxTurns: number;
	readonly rubric: Rubric = emptyRubric();
	/** Tool calls made (each call of each reply, up to where the episode ended). */
	toolCalls = 0;
	done = false;
	/** The final answer and its references, once given. */
	answer: string | null = null;
	references: string[] = [];
	/** Why the episode ended with a format error, in words. */
	formatDetail: string | null = null;
	readonly #found = new Set<string>();
	readonly #read = new Set<string>();

	constructor(scenario: Scenario, maxTurns = MAX_TURNS) {
		if (!Number.isInteger(maxTurns) || maxTurns < 1)
			throw new RangeError(`maxTurns is a positive integer, not ${maxTurns}`);
		this.scenario = scenario;
		this.mailbox = mailboxOf(scenario.mailboxSeed, scenario.changes);
		this.index = indexOf(this.mailbox);
		this.maxTurns = maxTurns;
	}

	/** Runs one reply's tool calls; the tool messages to append after it (maybe none). */
	step(reply: ReplyMessage): ChatCompletionToolMessageParam[] {
		if (this.done) throw new Error('the episode is over; start a new one');
		this.rubric.numTurns++;
		const out: ChatCompletionToolMessageParam[] = [];
		const calls = reply.tool_calls ?? [];
		if (!calls.length) this.#formatError('no_tool_call', 'the reply has no tool call');
		for (const call of calls) {
			if (this.done) break;
			this.toolCalls++;
			if (call.type !== 'function') {
				this.#formatError('unknown_tool', `a ${call.type} call, not a function call`);
				break;
			}
			const checked = checkCall(call.function.name, call.function.arguments);
			if (!checked.ok) {
				this.#formatError(checked.error, checked.detail);
				break;
			}
			const c = checked.call;
			if (c.name === 'search_inbox') {
				const result = searchInbox(this.index, c.keywords);
				for (const id of result.ids) this.#found.add(id);
				out.push({ role: 'tool', tool_call_id: call.id, content: result.content });
			} else if (c.name === 'read_email') {
				const result = readEmail(this.mailbox, c.message_id);
				if (result.found) this.#read.add(c.message_id);
				else this.rubric.invalidRead = true;
				out.push({ role: 'tool', tool_call_id: call.id, content: result.content });
			} else this.#finalAnswer(c.answer, c.reference_message_ids);
		}
		const expected = this.scenario.messageIds;
		this.rubric.foundEmail = expected.every((id) => this.#found.has(id));
		this.rubric.readEmail = expected.every((id) => this.#read.has(id));
		if (!this.done && this.rubric.numTurns >= this.maxTurns) {
			this.rubric.ranOutOfTurns = true;
			this.done = true;
		}
		return out;
	}

	#formatError(error: FormatError, detail: string) {
		this.rubric.formatError = error;
		this.formatDetail = detail;
		this.done = true;
	}

	#finalAnswer(answer: string, references: string[]) {
		const r = this.rubric;
		this.answer = answer;
		this.references = references;
		r.attemptedAnswer = true;
		r.saidIDontKnow = isIDontKnow(answer);
		r.correct = !r.saidIDontKnow && answerIsCorrect(this.scenario.answer, answer);
		r.citedEmail =
			!r.saidIDontKnow && this.scenario.messageIds.every((id) => references.includes(id));
		r.numReferences = references.length;
		this.done = true;
	}

	/** The conversation outgrew the context window: ends as out of turns (no answer). */
	outOfContext(): void {
		if (this.done) return;
		this.rubric.ranOutOfTurns = true;
		this.done = true;
	}

	/** The reward so far (final once `done`). */
	reward(): number {
		return inboxReward(this.rubric, this.maxTurns);
	}

	/** How it went, in a word: correct, wrong, i_dont_know, out_of_turns, format_error, unfinished. */
	outcome(): string {
		const r = this.rubric;
		if (r.formatError) return 'format_error';
		if (r.attemptedAnswer) return r.saidIDontKnow ? 'i_dont_know' : r.correct ? 'correct' : 'wrong';
		return r.ranOutOfTurns ? 'out_of_turns' : 'unfinished';
	}

	/** The trajectory's metrics (0/1 flags and counts). */
	metrics(): Metrics {
		const r = this.rubric;
		const flag = (b: boolean) => (b ? 1 : 0);
		return {
			correct: flag(r.correct),
			answered: flag(r.attemptedAnswer && !r.saidIDontKnow),
			said_i_dont_know: flag(r.saidIDontKnow),
			format_error: flag(r.formatError !== null),
			num_turns: r.numTurns,
			tool_calls: this.toolCalls,
			found_email: flag(r.foundEmail),
			read_email: flag(r.readEmail),
			cited_email: flag(r.citedEmail),
			invalid_read: flag(r.invalidRead),
			ran_out_of_turns: flag(r.ranOutOfTurns)
		};
	}
}
