/**
 * @file RULER's typed errors, each with a `kind` that survives structured cloning. With
 * `swallowExceptions`, rulerScoreGroup turns judge failures (request, reply) into a dropped
 * group; input and option errors are the caller's and always thrown, as ART raises.
 */

export type RulerErrorKind =
	/** The judge was not reached, timed out, or answered an HTTP error, after retries. */
	| 'ruler-judge-request'
	/** The judge answered, twice, with something that is not a valid set of scores. */
	| 'ruler-judge-reply'
	/** Trajectories RULER cannot judge (e.g. additional histories). */
	| 'ruler-input'
	/** Options out of their range (no judge, a bad concurrency, an unknown combination). */
	| 'ruler-options';

export class RulerError extends Error {
	constructor(
		readonly kind: RulerErrorKind,
		message: string,
		options?: { cause?: unknown }
	) {
		super(message, options);
		this.name = 'RulerError';
	}
}

export type JudgeRequestReason = 'timeout' | 'connection' | 'http' | 'other';

/** The judge could not give an answer: unreachable, too slow, or an HTTP error. */
export class JudgeRequestError extends RulerError {
	constructor(
		readonly reason: JudgeRequestReason,
		/** Who was asked, e.g. "judge 'gpt-4o-mini' at https://api.openai.com/v1". */
		readonly judge: string,
		/** The HTTP status of the last answer, when there was one. */
		readonly status: number | undefined,
		detail: string,
		cause: unknown
	) {
		super('ruler-judge-request', `RULER: the ${judge} ${detail}`, { cause });
		this.name = 'JudgeRequestError';
	}
}

/** Every reply of the judge (the first and the one after the corrective re-ask) was invalid. */
export class JudgeReplyError extends RulerError {
	constructor(
		readonly judge: string,
		/** What was wrong with each reply, in order. */
		readonly attempts: string[][],
		/** The last reply's text (for debugging; may be long). */
		readonly lastReply: string | null
	) {
		const last = attempts.at(-1) ?? [];
		super(
			'ruler-judge-reply',
			`RULER: the ${judge} gave no valid scores in ${attempts.length} ` +
				`${attempts.length === 1 ? 'reply' : 'replies (the second after being told what was wrong)'}` +
				`: ${last.join('; ')}. Use a judge that follows the json_schema response format ` +
				'(structured outputs), or a larger model; with swallowExceptions the group is dropped ' +
				'instead.'
		);
		this.name = 'JudgeReplyError';
	}
}

/** Trajectories RULER refuses to judge. */
export class RulerInputError extends RulerError {
	constructor(message: string) {
		super('ruler-input', `RULER: ${message}`);
		this.name = 'RulerInputError';
	}
}

export class RulerOptionsError extends RulerError {
	constructor(
		readonly option: string,
		message: string
	) {
		super('ruler-options', `RULER: ${option} ${message}`);
		this.name = 'RulerOptionsError';
	}
}
