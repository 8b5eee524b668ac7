/**
 * @file The inbox environment's reward: a pure function of what happened in an episode (its
 * rubric), in ART-E's ordering (OpenPipe/ART, the art-e example's calculate_reward):
 *
 *   format error        -2 / -1.9 / -1.8 + partial   (no tool call / unknown tool / bad args)
 *   wrong answer        -1 + partial                  [-1, -0.6]
 *   no answer           0 + partial                   [0, 0.4]  ("I don't know", out of turns)
 *   right answer        1 + 0.3 cited + 0.1 / references + 0.1 (1 - turns / maxTurns)
 *
 * partial = 0.1 each for: the expected email was among some search's results (found), it was
 * read (read), no read_email asked for an id that does not exist (no invalid read), and it is
 * cited in reference_message_ids (cited; only for an answer other than "I don't know").
 * Partial credit is at most 0.4, so the bands never overlap: every format error is below
 * every wrong answer (< -1.4 vs >= -1), every wrong answer below every non-answer, and every
 * right answer (in [1, 1.5)) above them all.
 *
 * Correctness is checked by code, not a judge: both answers are normalized (lowercased, each
 * run of characters other than letters and digits made one space, trimmed); the answer is
 * right when the expected one occurs in it as whole words ("7:45" is "7 45"; "at 07:45" holds
 * "07 45", "107:45" does not) and it has at most ANSWER_EXTRA_WORDS words more, so that
 * pasting a whole email is not an answer. An answer that normalizes to "" or to one of
 * I_DONT_KNOW is no answer.
 */

export type FormatError = 'no_tool_call' | 'unknown_tool' | 'bad_arguments';

/** What the reward reads from an episode. */
export interface Rubric {
	/** The format error that ended the episode, if one did. */
	formatError: FormatError | null;
	/** return_final_answer was called (with valid arguments). */
	attemptedAnswer: boolean;
	/** The answer was "I don't know" (or empty). */
	saidIDontKnow: boolean;
	correct: boolean;
	/** Every expected email was among some search's results. */
	foundEmail: boolean;
	/** Every expected email was read. */
	readEmail: boolean;
	/** Every expected email is in reference_message_ids (of an answer that is not IDK). */
	citedEmail: boolean;
	/** read_email was called with an id no email has. */
	invalidRead: boolean;
	/** How many ids reference_message_ids held. */
	numReferences: number;
	ranOutOfTurns: boolean;
	/** Model turns taken (replies, the final one included). */
	numTurns: number;
}

export function emptyRubric(): Rubric {
	return {
		formatError: null,
		attemptedAnswer: false,
		saidIDontKnow: false,
		correct: false,
		foundEmail: false,
		readEmail: false,
		citedEmail: false,
		invalidRead: false,
		numReferences: 0,
		ranOutOfTurns: false,
		numTurns: 0
	};
}

/** Base rewards of the outcome bands (ART-E's values). */
export const REWARD = {
	noToolCall: -2,
	unknownTool: -1.9,
	badArguments: -1.8,
	wrongAnswer: -1,
	noAnswer: 0,
	rightAnswer: 1,
	/** Each partial credit (found, read, no invalid read, cited). */
	partial: 0.1,
	/** A right answer that cites the expected email. */
	rightCited: 0.3,
	/** A right answer: this over the number of references (fewer, better). */
	rightFewReferences: 0.1,
	/** A right answer: this times (1 - turns / maxTurns). */
	rightFast: 0.1
} as const;

const FORMAT_BASE: Record<FormatError, number> = {
	no_tool_call: REWARD.noToolCall,
	unknown_tool: REWARD.unknownTool,
	bad_arguments: REWARD.badArguments
};

/** Words an answer may have beyond the expected answer's. */
export const ANSWER_EXTRA_WORDS = 4;
/** Answers (normalized) that mean no answer. */
export const I_DONT_KNOW = ['i don t know', 'i do not know', 'unknown', 'not found'];

/** Lowercased, runs of non-alphanumerics as one space, trimmed. */
export function normalizeAnswer(text: string): string {
	return text
		.toLowerCase()
		.replace(/[^a-z0-9]+/g, ' ')
		.trim();
}

export function isIDontKnow(answer: string): boolean {
	const n = normalizeAnswer(answer);
	return n === '' || I_DONT_KNOW.includes(n);
}

/** The rule above: the expected answer's words in order, in at most 4 more words. */
export function answerIsCorrect(expected: string, given: string): boolean {
	const e = normalizeAnswer(expected);
	const g = normalizeAnswer(given);
	if (e === '' || g === '') return false;
	const extra = g.split(' ').length - e.split(' ').length;
	return extra <= ANSWER_EXTRA_WORDS && ` ${g} `.includes(` ${e} `);
}

/** The partial credit of an episode (0 to 0.4). */
export function partialCredit(r: Rubric): number {
	const p = REWARD.partial;
	return (
		(r.foundEmail ? p : 0) +
		(r.readEmail ? p : 0) +
		(r.invalidRead ? 0 : p) +
		(r.citedEmail ? p : 0)
	);
}

/** The reward of an episode (see the table above); rounded to 1e-9 against float dust. */
export function inboxReward(r: Rubric, maxTurns: number): number {
	let reward: number;
	if (r.formatError) reward = FORMAT_BASE[r.formatError] + partialCredit(r);
	else if (r.attemptedAnswer && !r.saidIDontKnow && !r.correct)
		reward = REWARD.wrongAnswer + partialCredit(r);
	else if (!r.attemptedAnswer || r.saidIDontKnow) reward = REWARD.noAnswer + partialCredit(r);
	else
		reward =
			REWARD.rightAnswer +
			(r.citedEmail ? REWARD.rightCited : 0) +
			(r.numReferences > 0 ? REWARD.rightFewReferences / r.numReferences : 0) +
			REWARD.rightFast * (1 - r.numTurns / maxTurns);
	return Math.round(reward * 1e9) / 1e9;
}
