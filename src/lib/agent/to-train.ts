/**
 * @file The training view of trajectories: token sequences from the choices' `tabrl`
 * records, never re-tokenized. As ART builds them: a choice whose prompt_ids begin with the
 * sequence so far extends it (new prompt part as context, its ids trained), any other
 * starts a new one (`merge: false`: one per choice). Each carries its trajectory's
 * advantage. rolloutLogprobs[t] belongs to ids[t] (the model's grid is shifted by one).
 */
import { AgentError, InvalidAdvantageError } from './errors';
import { isChoice, type Trajectory, type TrajectoryGroup } from './trajectory';
import { validateGroup, validateTrajectory } from './validate';

/** Where one choice's sampled ids sit in a sequence. */
export interface ChoiceSpan {
	/** 0 for the main history, k for additionalHistories[k - 1]. */
	history: number;
	/** Index of the choice in that history's messagesAndChoices. */
	item: number;
	/** First sampled id's index in the sequence's ids. */
	start: number;
	length: number;
}

/** One sequence to train: plain data, ready to cross the worker boundary. */
export interface TrainSequence {
	/** [T] token ids: context and sampled tokens in order. */
	ids: number[];
	/** [T] 1 where ids[t] was sampled by the model (trained), 0 for context. */
	trainMask: Uint8Array;
	/** [T] sampling logprob of ids[t] where trained; NaN elsewhere. */
	rolloutLogprobs: Float32Array;
	/** The trajectory's advantage, for every trained token of the sequence. */
	advantage: number;
	groupIndex: number;
	/** Index of the trajectory in its group. */
	trajectoryIndex: number;
	/** The choices in this sequence, in order. */
	spans: ChoiceSpan[];
}

export interface ToTrainOptions {
	/** Chain consecutive turns into one sequence where the tokens allow it. Default true. */
	merge?: boolean;
}

export interface TrajectoryTrainInfo extends ToTrainOptions {
	advantage: number;
	groupIndex?: number;
	trajectoryIndex?: number;
}

interface Builder {
	ids: number[];
	mask: number[];
	logprobs: number[];
	spans: ChoiceSpan[];
}

function startsWith(ids: readonly number[], prefix: readonly number[]): boolean {
	if (prefix.length > ids.length) return false;
	for (let i = 0; i < prefix.length; i++) if (ids[i] !== prefix[i]) return false;
	return true;
}

function pushContext(b: Builder, ids: readonly number[]): void {
	for (const id of ids) {
		b.ids.push(id);
		b.mask.push(0);
		b.logprobs.push(NaN);
	}
}

/**
 * The sequences of one trajectory. Validates it first (validate.ts: finite reward, every
 * choice with usable tokens). A trajectory without choices gives no sequence.
 */
export function trajectoryToSequences(
	trajectory: Trajectory,
	info: TrajectoryTrainInfo
): TrainSequence[] {
	const { advantage, groupIndex = 0, trajectoryIndex = 0, merge = true } = info;
	const where = `group ${groupIndex}, trajectory ${trajectoryIndex}`;
	if (!Number.isFinite(advantage)) throw new InvalidAdvantageError(advantage, where);
	validateTrajectory(trajectory, where);

	const out: TrainSequence[] = [];
	let b: Builder = { ids: [], mask: [], logprobs: [], spans: [] };
	const flush = () => {
		if (!b.spans.length) return;
		out.push({
			ids: b.ids,
			trainMask: Uint8Array.from(b.mask),
			rolloutLogprobs: Float32Array.from(b.logprobs),
			advantage,
			groupIndex,
			trajectoryIndex,
			spans: b.spans
		});
		b = { ids: [], mask: [], logprobs: [], spans: [] };
	};

	trajectory.histories().forEach((history, h) => {
		history.messagesAndChoices.forEach((item, i) => {
			if (!isChoice(item)) return;
			// validateTrajectory has checked the record.
			const { prompt_ids, ids, logprobs } = item.tabrl!;
			if (merge && b.spans.length && startsWith(prompt_ids, b.ids)) {
				pushContext(b, prompt_ids.slice(b.ids.length));
			} else {
				flush();
				pushContext(b, prompt_ids);
			}
			b.spans.push({ history: h, item: i, start: b.ids.length, length: ids.length });
			for (let k = 0; k < ids.length; k++) {
				b.ids.push(ids[k]);
				b.mask.push(1);
				b.logprobs.push(logprobs[k]);
			}
		});
	});
	flush();
	return out;
}

/**
 * The sequences of every group, `advantages[g][i]` being the advantage of trajectory i of
 * group g. Each group is validated (validate.ts: a non-empty group with no choice is an
 * error); a group without trajectories (every rollout failed) is skipped, as ART does.
 */
export function groupsToSequences(
	groups: readonly TrajectoryGroup[],
	advantages: readonly (readonly number[])[],
	options: ToTrainOptions = {}
): TrainSequence[] {
	if (advantages.length !== groups.length)
		throw new AgentError(
			'invalid-advantage',
			`${groups.length} groups but advantages for ${advantages.length}: give one array per group.`
		);
	const out: TrainSequence[] = [];
	groups.forEach((group, g) => {
		if (advantages[g].length !== group.trajectories.length)
			throw new AgentError(
				'invalid-advantage',
				`Group ${g} has ${group.trajectories.length} trajectories but ` +
					`${advantages[g].length} advantages: give one per trajectory.`
			);
		if (group.trajectories.length === 0) return;
		validateGroup(group, `group ${g}`);
		group.trajectories.forEach((t, i) => {
			out.push(
				...trajectoryToSequences(t, {
					...options,
					advantage: advantages[g][i],
					groupIndex: g,
					trajectoryIndex: i
				})
			);
		});
	});
	return out;
}
