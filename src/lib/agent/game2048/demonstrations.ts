/**
 * @file Expert games for SFT before GRPO: each is a game of expertPolicy (policies.ts)
 * played through rollout.ts by `policyClient`, so its messages are exactly what the model
 * would be sent (ART's system prompt, the rendered boards, the same history window) and
 * its replies exactly the form the model must give. The choices carry no token record
 * (nothing was sampled): for imitation and scoring, not for a GRPO step.
 */
import { policyClient } from '../policy-client';
import type { Trajectory } from '../trajectory';
import { expertPolicy } from './policies';
import { rollout } from './rollout';

export interface DemonstrationOptions {
	/** Default 128. */
	winningValue?: number;
	/** As rollout's; null (default) sends the whole game each turn. */
	historyTurns?: number | null;
}

/** `count` expert games from seeds seed * 1_000_003 + i (disjoint runs for distinct seeds). */
export async function demonstrations(
	count: number,
	seed: number,
	{ winningValue, historyTurns }: DemonstrationOptions = {}
): Promise<Trajectory[]> {
	const out: Trajectory[] = [];
	for (let i = 0; i < count; i++) {
		const t = await rollout(policyClient(expertPolicy(), 'expert'), {
			model: 'expert',
			seed: seed * 1_000_003 + i,
			winningValue,
			historyTurns
		});
		t.metadata.source = 'expert';
		out.push(t);
	}
	return out;
}
