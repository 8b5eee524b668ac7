/**
 * @file What the studio draws of a letters game: the prompt, the reply and its reward (a
 * pure function of the trajectory, as every environment's replay).
 */
import type { Trajectory } from '../../trajectory';
import type { ReplayItem } from '../replay';
import { PROMPT } from './rules';

export function replay(t: Trajectory): ReplayItem[] {
	return [
		{ kind: 'message', role: 'user', text: PROMPT },
		{ kind: 'message', role: 'assistant', text: t.messages().at(-1)?.content?.toString() ?? '' },
		{ kind: 'outcome', text: 'share of a–m letters', reward: t.reward }
	];
}
