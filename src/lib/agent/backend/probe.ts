/**
 * @file The probe of a GRPO step (TrainReport.probe): the first PROBE_TOKENS trained tokens
 * of chosen sequences, their rollout logprobs beside the updated policy's.
 */
import type { TransformerModel } from '../../model/transformer/transformer';
import type { ProbedSequence, TrainInput } from './types';
import { PROBE_TOKENS } from './types';

/** The probed sequences' trained tokens, scored by the updated policy (TrainReport.probe). */
export async function probeSequences(
	model: TransformerModel,
	sequences: TrainInput['sequences'],
	which: number[],
	temperature = 1
): Promise<ProbedSequence[]> {
	const out: ProbedSequence[] = [];
	for (const index of which) {
		const seq = sequences[index];
		if (!seq) continue;
		const positions: number[] = [];
		for (let t = 1; t < seq.ids.length && positions.length < PROBE_TOKENS; t++)
			if (seq.trainMask[t]) positions.push(t);
		// (the scored length is the last probed token's: nothing after it is needed)
		const ids = seq.ids.slice(0, (positions.at(-1) ?? 0) + 1);
		const { logprobs } = await model.scoreTokens([ids], { temperature }); // [1, T - 1]
		out.push({
			sequence: index,
			ids: positions.map((t) => seq.ids[t]),
			before: positions.map((t) => Number(seq.rolloutLogprobs?.[t] ?? Number.NaN)),
			after: positions.map((t) => logprobs[t - 1])
		});
	}
	return out;
}
