/**
 * @file Typed errors of the agent layer (trajectories, gathering, the training view,
 * JSONL). Like model/errors.ts, each carries a `kind` that survives structured cloning;
 * these are not HTTP errors (the OpenAI surface has its own, in OpenAI's wire shape).
 */
import type { CapturedException } from './trajectory';

export type AgentErrorKind =
	| 'non-finite-reward'
	| 'choice-tokens'
	| 'no-trainable-choice'
	| 'too-many-exceptions'
	| 'gather-options'
	| 'invalid-rollout'
	| 'invalid-advantage'
	| 'trajectory-format'
	/** SFT data the chat template cannot place (see backend/sft-sequences.ts). */
	| 'sft-data'
	/** A TrainableModel used before register(), or a name the backend does not hold. */
	| 'not-registered'
	/** A run name already saved with another base model or warm start. */
	| 'run-exists';

export class AgentError extends Error {
	constructor(
		readonly kind: AgentErrorKind,
		message: string,
		options?: { cause?: unknown }
	) {
		super(message, options);
		this.name = 'AgentError';
	}
}

/** A reward that is NaN or infinite: GRPO's group mean and std would be poisoned by it. */
export class NonFiniteRewardError extends AgentError {
	constructor(
		readonly reward: number,
		/** Where the trajectory is, e.g. 'group 2, trajectory 5'. */
		readonly where: string
	) {
		super(
			'non-finite-reward',
			`The reward of ${where} is ${reward}, not a finite number. Set trajectory.reward to a ` +
				'finite value in the rollout (or in afterEach), or drop the trajectory.'
		);
		this.name = 'NonFiniteRewardError';
	}
}

/**
 * A choice (a reply of the trainable model) without usable token data: no `tabrl` record,
 * or ids and logprobs that disagree or are not numbers. Training needs the exact tokens the
 * model sampled and their logprobs; they come with choices from TabRL's own OpenAI client.
 */
export class ChoiceTokensError extends AgentError {
	constructor(
		/** Path of the choice, e.g. 'additionalHistories[0].messagesAndChoices[3]'. */
		readonly path: string,
		readonly problem: string,
		where = ''
	) {
		super(
			'choice-tokens',
			`The choice at ${path}${where ? ` of ${where}` : ''} cannot be trained: ${problem}. ` +
				'Append choices exactly as the local openaiClient() returned them (they carry ' +
				'choice.tabrl = {prompt_ids, ids, logprobs}); a reply that should only be context ' +
				"belongs in messagesAndChoices as a plain {role: 'assistant', content} message."
		);
		this.name = 'ChoiceTokensError';
	}
}

/** A group of trajectories none of which holds a choice: there is nothing to train. */
export class NoTrainableChoiceError extends AgentError {
	constructor(readonly where: string) {
		super(
			'no-trainable-choice',
			`No trajectory of ${where} holds a choice of the trainable model, so it has no token to ` +
				'train. Append the choices the model returned (completion.choices[0]) to ' +
				'trajectory.messagesAndChoices, not only their text as assistant messages.'
		);
		this.name = 'NoTrainableChoiceError';
	}
}

/** More rollouts failed than gatherTrajectoryGroups' maxExceptions allows. */
export class TooManyExceptionsError extends AgentError {
	constructor(
		/** Every failure captured up to and including the one over the limit. */
		readonly exceptions: CapturedException[],
		readonly total: number,
		readonly maxExceptions: number,
		cause: unknown
	) {
		const last = exceptions.at(-1);
		super(
			'too-many-exceptions',
			`${exceptions.length} of ${total} rollouts failed, more than maxExceptions = ` +
				`${maxExceptions} allows (last: ${last ? `${last.type}: ${last.message}` : 'unknown'}). ` +
				'Fix the rollout, or raise maxExceptions (a count, or a fraction of all rollouts ' +
				'below 1) to train on the groups that succeeded.',
			{ cause }
		);
		this.name = 'TooManyExceptionsError';
	}
}

/** An option of gatherTrajectoryGroups out of its range. */
export class GatherOptionsError extends AgentError {
	constructor(
		readonly option: string,
		message: string
	) {
		super('gather-options', `gatherTrajectoryGroups: ${option} ${message}`);
		this.name = 'GatherOptionsError';
	}
}

/** A rollout resolved to something that is not a Trajectory. */
export class InvalidRolloutError extends AgentError {
	constructor(readonly got: string) {
		super(
			'invalid-rollout',
			`A rollout returned ${got}, not a Trajectory. Return \`new Trajectory({...})\` from ` +
				'the rollout function.'
		);
		this.name = 'InvalidRolloutError';
	}
}

/** An advantage handed to the training view that is not a finite number. */
export class InvalidAdvantageError extends AgentError {
	constructor(
		readonly advantage: number,
		readonly where: string
	) {
		super(
			'invalid-advantage',
			`The advantage of ${where} is ${advantage}, not a finite number; compute advantages ` +
				'from finite rewards (validateGroup checks them).'
		);
		this.name = 'InvalidAdvantageError';
	}
}

/** A JSONL line (or a field in it) that is not a trajectory in ART's shape. */
export class TrajectoryFormatError extends AgentError {
	constructor(
		/** 1-based line number in the JSONL text, or 0 when not from a file. */
		readonly line: number,
		/** The field, e.g. 'messages_and_choices[2]'. */
		readonly path: string,
		readonly problem: string
	) {
		super(
			'trajectory-format',
			`${line ? `Line ${line}` : 'The trajectory'}${path ? `, ${path}` : ''}: ${problem}. ` +
				"Each line must be one JSON object in the shape of ART's Trajectory " +
				'(messages_and_choices, tools, additional_histories, reward, metrics, metadata, logs).'
		);
		this.name = 'TrajectoryFormatError';
	}
}
