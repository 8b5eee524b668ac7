/**
 * @file Checks trajectories can be trained before anything is computed: finite rewards,
 * every choice with its `tabrl` record (prompt ids, sampled ids, one finite logprob each),
 * at least one choice per group; each failure a typed error naming its path. ART raises
 * the same way; its opt-out for missing logprobs has no counterpart (the engine gives them).
 */
import { ChoiceTokensError, NoTrainableChoiceError, NonFiniteRewardError } from './errors';
import { isChoice, type Choice, type Trajectory, type TrajectoryGroup } from './trajectory';

function isTokenIds(value: unknown): value is number[] {
	return Array.isArray(value) && value.every((v) => Number.isInteger(v) && v >= 0);
}

/** Why a choice's token record cannot be trained, or null when it can. */
export function choiceTokensProblem(choice: Choice): string | null {
	const t = choice.tabrl as unknown;
	if (typeof t !== 'object' || t === null)
		return 'it has no tabrl record (it did not come from the local engine)';
	const { prompt_ids, ids, logprobs } = t as Record<string, unknown>;
	if (!isTokenIds(prompt_ids)) return 'tabrl.prompt_ids is not an array of token ids';
	// logprobs[t] scores ids[t] given everything before it: a first sampled token needs a
	// prompt token before it.
	if (prompt_ids.length === 0) return 'tabrl.prompt_ids is empty';
	if (!isTokenIds(ids)) return 'tabrl.ids is not an array of token ids';
	if (!Array.isArray(logprobs)) return 'tabrl.logprobs is missing';
	if (logprobs.length !== ids.length)
		return `tabrl has ${ids.length} ids but ${logprobs.length} logprobs`;
	const bad = logprobs.findIndex((v) => typeof v !== 'number' || !Number.isFinite(v));
	if (bad >= 0) return `tabrl.logprobs[${bad}] is ${logprobs[bad]}, not a finite number`;
	return null;
}

/**
 * Throws on a non-finite reward or a choice without usable tokens; returns how many
 * choices (trainable replies) the trajectory holds over all its histories.
 */
export function validateTrajectory(trajectory: Trajectory, where = 'the trajectory'): number {
	if (typeof trajectory.reward !== 'number' || !Number.isFinite(trajectory.reward))
		throw new NonFiniteRewardError(trajectory.reward, where);
	let choices = 0;
	trajectory.histories().forEach((history, h) => {
		const base =
			h === 0 ? 'messagesAndChoices' : `additionalHistories[${h - 1}].messagesAndChoices`;
		history.messagesAndChoices.forEach((item, i) => {
			if (!isChoice(item)) return;
			const problem = choiceTokensProblem(item);
			if (problem) throw new ChoiceTokensError(`${base}[${i}]`, problem, where);
			choices++;
		});
	});
	return choices;
}

/**
 * Validates every trajectory of the group and throws NoTrainableChoiceError when none holds
 * a choice. A group with no trajectories at all (every rollout failed) passes: it has
 * nothing to train and nothing wrong, and is skipped (as ART skips an empty group).
 * Returns the number of choices in the group.
 */
export function validateGroup(group: TrajectoryGroup, where = 'the group'): number {
	let choices = 0;
	group.trajectories.forEach((t, i) => {
		choices += validateTrajectory(t, `${where}, trajectory ${i}`);
	});
	if (group.trajectories.length > 0 && choices === 0) throw new NoTrainableChoiceError(where);
	return choices;
}
