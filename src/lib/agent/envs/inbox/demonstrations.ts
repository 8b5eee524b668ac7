/**
 * @file Expert episodes, for SFT before GRPO and for a tokenizer's training text (rendered
 * with the chat template: scripts/default-model.ts): `demonstrations(count, seed)` plays the
 * expert (policies.ts) through `rollout(policyClient(expertPolicy(scenario)))`, so a
 * demonstration is exactly the conversation a model would have (prompts, tools, tool
 * results, rewards).
 *
 * Scenario seeds are seed * DEMO_STRIDE + i, below EVAL_SEED (a RangeError otherwise), so
 * demonstrations never show an evaluation mailbox.
 */
import { policyClient } from '../../policy-client';
import type { Trajectory } from '../../trajectory';
import { expertPolicy } from './policies';
import { EVAL_SEED } from '../seeds';
import { scenario } from './questions';
import { rollout } from './rollout';

/** Seeds of distinct demonstration sets start this far apart. */
export const DEMO_STRIDE = 1_000_003;

/** The scenario seeds of `demonstrations(count, seed)`. */
export function demonstrationSeeds(count: number, seed: number): number[] {
	const seeds = Array.from({ length: count }, (_, i) => seed * DEMO_STRIDE + i);
	if (seeds.some((s) => s < 0 || s >= EVAL_SEED))
		throw new RangeError(
			`demonstration seeds must stay in [0, ${EVAL_SEED}) (evaluation's); ` +
				`seed ${seed} with count ${count} does not`
		);
	return seeds;
}

/** `count` expert episodes through the rollout (see the file's doc). */
export async function demonstrations(
	count: number,
	seed: number,
	options: { maxTurns?: number; changes?: number; readEveryChange?: boolean } = {}
): Promise<Trajectory[]> {
	const out: Trajectory[] = [];
	const { maxTurns, changes, readEveryChange } = options;
	for (const s of demonstrationSeeds(count, seed)) {
		const expert = expertPolicy(scenario(s, { changes }), { readEveryChange });
		const client = policyClient(expert, 'expert');
		const t = await rollout(client, { model: 'expert', seed: s, maxTurns, changes });
		t.metadata.source = 'expert';
		out.push(t);
	}
	return out;
}
